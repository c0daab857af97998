"""RunGuard: the bounds of one run of a paginating source, shared by every source (one guard per run; the runner
makes it, and also counts a span feed's reads as its pages).

A trace store can misbehave without failing: a cursor that repeats, a page that is empty but says there is more,
an endless stream of fresh cursors, one huge answer, a trace whose spans never end. The guard stops each of them
with a SourceError the runner counts once per run (agent_monitor_poll_errors_total{kind}):

- `cursor_loop`: a cursor (or page key) of a chain of pages comes back a second time in the run, or an empty
  page carries a next cursor;
- `page_limit`: more than `max_pages_per_run` page requests (listings, searches, span pages; Tempo's fetch of
  one trace by id is not a page);
- `byte_limit`: the response bodies of the run add up to more than `max_bytes_per_run` (counted as they stream
  in, so one huge answer stops at the bound instead of filling memory).

Spans beyond `max_spans_per_trace` (the assembly's bound) are dropped from their trace and counted (kind
`span_limit`, the run goes on). A warning a source would repeat per request goes through `warn()`: its first is
logged, the others counted (the runner logs how many, once per run).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from evaluators.traces.records import SpanRecord
from monitor.sources.errors import SourceError

__all__ = ["RunGuard", "RunLimits"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunLimits:
    """None: no bound (the one-shot `agent-monitor poll` reads the range it was given)."""

    pages: int | None = None
    bytes: int | None = None
    spans_per_trace: int | None = None


class RunGuard:
    """One run's page, byte and span accounting; SourceError (`cursor_loop`, `page_limit`, `byte_limit`) when
    the store does not advance or the run goes past a bound."""

    def __init__(self, limits: RunLimits | None = None) -> None:
        self.limits = limits or RunLimits()
        self.pages = 0  # page requests made
        self.bytes = 0  # response bytes read
        self.dropped_spans = 0  # over spans_per_trace
        self.cut_traces: set[str] = set()
        self.warnings: dict[str, int] = {}  # how many warnings of each key (the first one logged)
        self._cursors: set[tuple[Hashable, Hashable]] = set()

    def page(self, what: str) -> None:
        """Before a page request: `page_limit` when the run has made max pages already."""
        bound = self.limits.pages
        if bound is not None and self.pages >= bound:
            raise SourceError(
                "page_limit",
                f"{what}: the run stopped after {self.pages} page requests (max_pages_per_run); the next run goes on",
            )
        self.pages += 1

    def start(self, chain: Hashable, key: Hashable = None) -> None:
        """Remember the first key of a chain of pages (None: its first page has no cursor)."""
        self._cursors.add((chain, key))

    def advance(self, what: str, chain: Hashable, key: Hashable, rows: int) -> None:
        """After a page of `chain` that leads on to `key` (its next cursor or page key; None or "": the last):
        `cursor_loop` when `key` was already requested in this run, or the page was empty but leads on."""
        if key is None or key == "":
            return
        if rows == 0:
            raise SourceError("cursor_loop", f"{what}: an empty page with a next cursor ({key!r:.80}): the store "
                                             "does not advance; the run stopped")  # fmt: skip
        if (chain, key) in self._cursors:
            raise SourceError("cursor_loop", f"{what}: cursor {key!r:.80} came back after {self.pages} page "
                                             "requests: the store does not advance; the run stopped")  # fmt: skip
        self._cursors.add((chain, key))

    def read(self, size: int, what: str) -> None:
        """Count `size` more response bytes: `byte_limit` once the run is over its bound."""
        self.bytes += size
        self.expect(0, what)

    def expect(self, size: int, what: str) -> None:
        """`byte_limit` when `size` more bytes (an answer's Content-Length) would take the run over its bound."""
        bound = self.limits.bytes
        if bound is not None and self.bytes + size > bound:
            raise SourceError(
                "byte_limit",
                f"{what}: the run would read more than {bound} response bytes (max_bytes_per_run); stopped",
            )

    def keep(self, trace_id: str, kept: list[SpanRecord], spans: Iterable[SpanRecord]) -> list[SpanRecord]:
        """`kept` with as many of `spans` added as spans_per_trace allows (the rest dropped and counted)."""
        bound = self.limits.spans_per_trace
        for span in spans:
            if bound is None or len(kept) < bound:
                kept.append(span)
                continue
            self.dropped_spans += 1
            if trace_id not in self.cut_traces:
                self.cut_traces.add(trace_id)
                self.warn(log, "span_limit", f"trace {trace_id} has more than {bound} spans: the rest are left "
                                             "out (assembly.max_spans_per_trace)")  # fmt: skip
        return kept

    def warn(self, logger: logging.Logger, key: str, message: str) -> None:
        """Log `message` the first time `key` comes up in the run; only count the others (the runner logs how
        many there were)."""
        count = self.warnings.get(key, 0)
        if count == 0:
            logger.warning("%s", message)
        self.warnings[key] = count + 1
