"""Write-back: the results of the traces a Phoenix source polled, posted to Phoenix as annotations (see
annotations.py), once the traces are evaluated and stored. Read back from the result store (every result the
store keeps: with `store.results: failing` only failures and skips are there; skips are not posted), so what
Phoenix shows is what the review shows. A judge's result arrives after its trace was evaluated: it is posted when
it is already stored, else not at all (a later run does not post it again)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from monitor.consumer import PolledTrace
from monitor.sources.phoenix.annotations import Annotation, PhoenixAnnotations

if TYPE_CHECKING:
    from monitor.review.models import TraceDetail
    from monitor.store.writer import QueuedResultStore


class StoredResults(Protocol):
    """What write-back reads of the review's read side (`monitor.review.of_store.reader_of(store)`)."""

    def trace(self, trace_id: str) -> TraceDetail | None: ...

    def close(self) -> None: ...


class PhoenixWriteBack:
    def __init__(
        self,
        annotations: PhoenixAnnotations,
        store: QueuedResultStore,
        reader_of: Callable[[QueuedResultStore], StoredResults],
        judges: set[str],
    ) -> None:
        """`reader_of`: opens the review reader of `store`; `judges`: the metric labels of the LLM judges
        (annotator_kind LLM; every other evaluator is CODE)."""
        self.annotations = annotations
        self.store = store
        self.reader_of = reader_of
        self.judges = judges
        self._reader: StoredResults | None = None

    async def __call__(self, traces: list[PolledTrace]) -> int:
        """Post the stored results of `traces`; how many Phoenix accepted (SourceError when it fails)."""
        if not traces:
            return 0
        await asyncio.to_thread(self.store.flush)
        if self._reader is None:
            self._reader = self.reader_of(self.store)
        reader = self._reader
        found: list[Annotation] = []
        for trace in traces:
            detail = await asyncio.to_thread(reader.trace, trace.trace_id)
            if detail is None:
                continue
            for result in detail.results:
                if result.outcome == "skip":
                    continue
                found.append(
                    Annotation(
                        trace_id=trace.trace_id,
                        span_id=result.span_id if result.level != "trace" else None,
                        name=result.evaluator,
                        annotator_kind="LLM" if result.evaluator in self.judges else "CODE",
                        label=result.outcome,
                        score=result.score,
                        explanation=result.explanation,
                    )
                )
        return await self.annotations.post(found)

    async def close(self) -> None:
        await self.annotations.close()
        if self._reader is not None:
            self._reader.close()
