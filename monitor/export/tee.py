"""`tee`: a store write that also offers what it writes to the evaluation exporter (the main process's late results
and evaluated sessions), or the exporter alone when there is no store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from monitor.export.exporter import EvaluationExporter

T = TypeVar("T")
Write = Callable[[Sequence[T]], None]


def offering(exporter: EvaluationExporter) -> Write[Any]:
    """A write that only offers what it is given to `exporter` (a store that wrote it already)."""

    def offered(items: Sequence[Any]) -> None:
        exporter.offer_outcomes(items)

    return offered


def tee(write: Write[T] | None, exporter: EvaluationExporter | None) -> Write[T] | None:
    """`write` (None: no store), with every batch it writes offered to `exporter` first (None: `write` as it is).
    The offer never blocks nor raises (exporter.py)."""
    if exporter is None:
        return write

    def written(items: Sequence[Any]) -> None:
        exporter.offer_outcomes(items)
        if write is not None:
            write(items)

    return written
