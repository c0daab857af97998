"""Explainer: one ExplainQuery → the store's rows of its range(s) → the slice and reference masks → the contrast
(contrast.py) → an Explanation. Blocking (SQL and numpy, well under a second for 100k traces): the API and pages
call it on a worker thread.

The slices (model.ExplainQuery): an evaluator's failing traces against its passing ones (a trace with a failing
verdict of it is failing; one with verdicts and none failing is passing: `trace_signals.failed_evaluators` /
`passed_evaluators`); a signature's traces against the evaluator's other verdicts; a range against a reference
range (a drift's recent window against its baseline); a filter's traces against the rest of the range.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from monitor.config.explain import ExplainConfig
from monitor.explain.contrast import ContrastSettings, contrast
from monitor.explain.model import ExplainQuery, Explanation, SliceKind
from monitor.explain.rows import DimensionRows
from monitor.review.api_params import BadRequest, Unavailable
from monitor.store.dimension_codes import verdict_name
from monitor.store.dimension_reads import DimensionRead
from monitor.store.health import StoreUnavailable

MAX_RANGE = 31 * 86400.0  # the longest range explained (a month)
UNAVAILABLE = "explain unavailable: "


class ExplainReads(Protocol):
    def explain_rows(
        self, since: float, until: float, params: dict[str, Any], limit: int, timeout: float | None = None
    ) -> DimensionRead: ...

    def explain_texts(self, trace_ids: Sequence[str]) -> dict[str, str | None]: ...

    def signature_trace_ids(
        self, signature: str, since: float, until: float, limit: int, timeout: float | None = None
    ) -> set[str]: ...


class _Texts(Sequence[str | None]):
    """The packed texts of the rows read, looked up (by trace id) only for the rows the contrast names."""

    def __init__(self, reader: ExplainReads, trace_ids: list[str]) -> None:
        self.reader, self.trace_ids = reader, trace_ids
        self.found: dict[str, str | None] = {}

    def __len__(self) -> int:
        return len(self.trace_ids)

    def __getitem__(self, index: Any) -> Any:  # an index (a slice is not asked for)
        trace_id = self.trace_ids[index]
        if trace_id not in self.found:
            self.found.update(self.reader.explain_texts([trace_id]))
        return self.found.get(trace_id)


class Explainer:
    """Explanations over `reader` (None: unavailable, for the reason `unavailable`), as `settings` has them."""

    def __init__(
        self,
        reader: ExplainReads | None,
        settings: ExplainConfig | None = None,
        unavailable: str = "the result store is disabled (store.enabled: false)",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.reader = reader
        self.settings = settings or ExplainConfig()
        self.unavailable = unavailable
        self.clock = clock
        self.contrast_settings = ContrastSettings(fdr=self.settings.fdr, min_traces=self.settings.min_traces)

    def explain(self, query: ExplainQuery) -> Explanation:
        """The explanation of `query`; BadRequest for a query that names no slice or an empty or too long range,
        Unavailable when the store cannot be read."""
        kind = _kind_of(query)
        reader = self.reader
        if reader is None:
            raise Unavailable(UNAVAILABLE + self.unavailable)
        limit, timeout = self.settings.max_traces, self.settings.read_timeout
        try:
            reads = [reader.explain_rows(query.since, query.until, _params(kind, query), limit, timeout)]
            if kind == "drift":
                assert query.reference_since is not None and query.reference_until is not None
                reference = (query.reference_since, query.reference_until)
                reads.append(reader.explain_rows(*reference, _params(kind, query), limit, timeout))
            signed: set[str] = set()
            if query.signature is not None:
                signed = reader.signature_trace_ids(query.signature, query.since, query.until, limit, timeout)
            in_slice, in_reference = _masks(kind, reads, signed)
            ids = [t for r in reads for t in r.trace_ids]
            rows = DimensionRows.of([b for r in reads for b in r.blobs], _Texts(reader, ids))
            found = contrast(rows, in_slice, in_reference, self.contrast_settings)
        except (sqlite3.Error, StoreUnavailable) as exc:
            raise Unavailable(f"{UNAVAILABLE}{type(exc).__name__}: {exc}") from exc
        slice_words, reference_words = _described(kind, query)
        return Explanation(
            kind=kind,
            query=query,
            slice=slice_words,
            reference=reference_words,
            slice_traces=found.slice_traces,
            reference_traces=found.reference_traces,
            tested=found.tested,
            fdr=self.settings.fdr,
            factors=found.factors,
            truncated=any(r.truncated for r in reads),
            note=_note(
                found.slice_traces,
                found.reference_traces,
                len(found.factors),
                found.tested,
                slice_words,
                reference_words,
                self.settings.fdr,
            ),
        )


def _kind_of(query: ExplainQuery) -> SliceKind:
    if not query.until > query.since:
        raise BadRequest("until: must be after since")
    if query.until - query.since > MAX_RANGE:
        raise BadRequest("since: the range is longer than 31 days")
    if (query.reference_since is None) != (query.reference_until is None):
        raise BadRequest("reference_since: give reference_since and reference_until together")
    if query.reference_since is not None:
        assert query.reference_until is not None
        if not query.reference_until > query.reference_since:
            raise BadRequest("reference_until: must be after reference_since")
        if query.reference_until - query.reference_since > MAX_RANGE:
            raise BadRequest("reference_since: the reference range is longer than 31 days")
        if query.evaluator is not None or query.signature is not None:
            raise BadRequest("reference_since: a reference range compares traces, not an evaluator's verdicts")
        return "drift"
    if query.signature is not None:
        return "signature"
    if query.evaluator is not None:
        return "failures"
    if query.service is None and query.agent is None and query.variant is None:
        raise BadRequest("evaluator: name an evaluator, a signature, a reference range or a filter to explain")
    return "filter"


def _params(kind: SliceKind, query: ExplainQuery) -> dict[str, Any]:
    """The rows the range's read keeps (store/dimension_reads.py): the filter's (every row for a filter's
    contrast with the rest), with a verdict of the evaluator for its failures or a signature."""
    marker = f"|{verdict_name(query.evaluator)}|" if query.evaluator is not None else None
    return {
        "service": query.service,
        "agent": query.agent,
        "variant": query.variant,
        "restrict": int(kind != "filter"),
        "marker": marker,
        "with_verdict": int(kind in ("failures", "signature")),
    }


def _flags(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=bool) if values else np.zeros(0, dtype=bool)


def _masks(kind: SliceKind, reads: list[DimensionRead], signed: set[str]) -> tuple[np.ndarray, np.ndarray]:
    read = reads[0]
    if kind == "drift":
        recent, baseline = np.ones(len(reads[0].trace_ids), bool), np.ones(len(reads[1].trace_ids), bool)
        return np.concatenate([recent, ~baseline]), np.concatenate([~recent, baseline])
    if kind == "filter":
        chosen = _flags(read.matches)
        return chosen, ~chosen
    if kind == "failures":
        failed = _flags(read.failed)
        return failed, ~failed & _flags(read.passed)
    in_signature = np.fromiter((t in signed for t in read.trace_ids), dtype=bool, count=len(read.trace_ids))
    return in_signature, ~in_signature


def _described(kind: SliceKind, query: ExplainQuery) -> tuple[str, str]:
    scope = " ".join(f"{name}={value}" for name, value in (("service", query.service), ("agent", query.agent),
                     ("variant", query.variant)) if value is not None)  # fmt: skip
    scoped = f" ({scope})" if scope else ""
    if kind == "failures":
        return f"the failures of {query.evaluator}{scoped}", "its passes"
    if kind == "signature":
        of = f"{query.evaluator}'s other verdicts" if query.evaluator else "the other traces with a verdict"
        return f"the traces of signature {query.signature}{scoped}", of
    if kind == "drift":
        return f"the recent traces{scoped}", "the baseline's traces"
    return f"the traces of {scope}", "the other traces of the range"


def _note(slice_n: int, reference_n: int, factors: int, tested: int, slice_words: str, reference_words: str,
          fdr: float) -> str | None:  # fmt: skip
    if slice_n == 0:
        return f"no trace in this range is among {slice_words}"
    if reference_n == 0:
        return f"nothing to compare with: no trace in this range is among {reference_words}"
    if factors == 0:
        return f"no value sets {slice_words} apart ({tested} tested at a false discovery rate of {fdr:.0%})"
    return None


__all__ = ["MAX_RANGE", "UNAVAILABLE", "ExplainReads", "Explainer"]
