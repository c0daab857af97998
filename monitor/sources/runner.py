"""One run of a polled source: what to read, what to evaluate, where the checkpoint moves (the scheduler's job).

A trace source's run reads the traces that started in `[mark - overlap, now - settle_delay)` (a first run: mark =
now - backfill), page by page. Of each page it keeps the traces the source has not evaluated before (the
checkpoint's seen ids) and that ended before `now - settle_delay` (a trace still being written waits for the next
run, and holds the mark at its start), gives the sink those that no receiver is assembling or has evaluated
(`claim`), waits until their results are recorded, and only then remembers them as seen. At the end the mark moves
to the end of the range (or the start of the earliest unfinished trace) and seen ids older than the overlap are
forgotten. A run stopped by `max_traces_per_run` keeps its mark: the seen ids carry its progress. So a restart at
any point resumes without losing or repeating a trace (a crash between "recorded" and "remembered" repeats at most
that page).

A span feed's run hands the spans written since its state to the assembler, which completes traces as it does
for received spans, then stores the feed's new state.

Each run has a RunGuard (guard.py): `max_pages_per_run`, `max_bytes_per_run` and the assembly's
`max_spans_per_trace` bound it, and a cursor that does not advance stops it (kinds `cursor_loop`, `page_limit`,
`byte_limit`). The pages read before such a stop are kept: an `ordered` source's checkpoint moves to the latest
start they covered (as it does when `max_traces_per_run` stops a run), so the next run goes on from there.

With `leases` (a result store that several replicas share), a run starts only on the replica that holds the
source, which confirms it before each page and before each save; a replica that does not hold it does nothing
until the holder goes (agent_monitor_poll_leader is 0 there), then reads the checkpoint again and goes on from it.
A holder that loses the source mid-run stops without saving (at most the page in hand is evaluated twice).

A run never raises: failures are counted in agent_monitor_poll_errors_total{kind} once per run and logged once
per change; the warnings of a source are logged once per run. While runs fail, agent_monitor_poll_lag_seconds
keeps growing (now minus the last checkpoint a run saved, or minus the first run's start).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from monitor.config.pipeline import AssemblyConfig
from monitor.config.sources import SourceConfig
from monitor.consumer import PollSink
from monitor.metrics.poll import PollMetrics
from monitor.sources.base import BOUND_KINDS, Leases, PolledTrace, SourceError, SpanFeed, TraceSource
from monitor.sources.checkpoints import Checkpoint, CheckpointStore
from monitor.sources.guard import RunGuard, RunLimits
from monitor.sources.leadership import Leadership, LeaseError, LeaseLost
from monitor.sources.write_back import WriteBack

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(slots=True)
class RunReport:
    source: str
    since: float | None = None
    until: float | None = None
    listed: int = 0  # traces the source returned
    evaluated: int = 0  # handed to evaluation
    already_seen: int = 0  # evaluated by an earlier run
    received: int = 0  # claimed by the receivers (evaluated once, there)
    unfinished: int = 0  # still being written: next run
    spans: int = 0  # a span feed's spans
    pages: int = 0  # page requests (the guard's count)
    bytes: int = 0  # response bytes
    dropped_spans: int = 0  # over max_spans_per_trace
    stopped_early: bool = False
    standby: bool = False  # another replica polls the source (or took it over during the run)
    error: SourceError | None = None


class CheckpointError(Exception):
    """The checkpoint store failed (kind "checkpoint")."""


class Poller:
    """Runs one source; `run()` is the scheduler's job, `run_range()` the one-shot command's."""

    def __init__(
        self,
        config: SourceConfig,
        source: TraceSource | SpanFeed,
        checkpoints: CheckpointStore,
        sink: PollSink,
        metrics: PollMetrics | None = None,
        clock: Callable[[], float] = time.time,
        after_evaluated: Callable[[list[PolledTrace]], Awaitable[object]] | None = None,
        max_spans_per_trace: int = AssemblyConfig.model_fields["max_spans_per_trace"].default,
        leases: Leases | None = None,
    ) -> None:
        """`after_evaluated`: called with each page's evaluated traces once their results are recorded (write-back);
        its failures are counted (kind "writeback") and do not fail the run. `max_spans_per_trace`: the
        assembly's bound, applied to each polled trace. `leases`: which sources this replica polls (None: all)."""
        self.config = config
        self.name = config.name
        self.source = source
        self.checkpoints = checkpoints
        self.sink = sink
        self.metrics = metrics
        self.clock = clock
        self.after_evaluated = after_evaluated
        self.leadership = Leadership(self.name, leases, metrics, on_gained=self._forget_checkpoint)
        self._write_back = WriteBack(self.name, after_evaluated, metrics)
        self.stopping = False
        self.last_error_kind: str | None = None
        self.limits = RunLimits(
            pages=config.max_pages_per_run,
            bytes=getattr(config, "max_bytes_per_run", None),
            spans_per_trace=max_spans_per_trace,
        )
        self._checkpoint: Checkpoint | None = None
        self._first_run: float | None = None  # clock time of the first run (the lag's origin before a checkpoint)
        self._last_ok: float | None = None  # clock time of a span feed's last good run
        if metrics is not None:
            metrics.add_source(self.name)

    async def run(self) -> RunReport:
        """One scheduled run; never raises (cancellation excepted)."""
        started = time.monotonic()
        if self._first_run is None:
            self._first_run = self.clock()
        report = RunReport(self.name)
        guard = RunGuard(self.limits)
        kind: str | None = None
        try:
            if not await self.leadership.lead():
                report.standby = True
                return report
            if isinstance(self.source, TraceSource):
                await self._run_traces(report, guard)
            else:
                await self._run_feed(report, guard)
        except SourceError as exc:
            kind, report.error = exc.kind, exc
            message = str(exc)
        except CheckpointError as exc:
            kind, message = "checkpoint", str(exc)
        except LeaseLost:
            report.standby = True
        except LeaseError as exc:
            kind, message = "lease", str(exc)
        except Exception as exc:
            log.debug("poll run of %s failed", self.name, exc_info=True)
            kind, message = "internal", f"{type(exc).__name__}: {exc}"
        if kind is not None and kind != "lease":  # a replica that cannot say it polls the source has no lag
            self._lag_while_failing()
        self._account(guard, report)
        self._report(kind, message if kind else "", report, time.monotonic() - started)
        return report

    async def run_range(self, since: float, until: float) -> RunReport:
        """Every trace that started in [since, until), seen or not, without touching the checkpoint (backfills,
        investigations); SourceError when the source fails."""
        report = RunReport(self.name, since, until)
        if not isinstance(self.source, TraceSource):
            raise SourceError("client", f"source {self.name} is a span feed: it has no time range to read")
        guard = RunGuard(RunLimits(spans_per_trace=self.limits.spans_per_trace))  # the whole range: no page bound
        async for page in self.source.pages(since, until, guard):
            report.listed += len(page)
            claimed = set(self.sink.claim([t.trace_id for t in page]))
            handed = await self.sink.evaluate([t for t in page if t.trace_id in claimed])
            report.evaluated += len(handed)
        self._account(guard, report)
        return report

    # --- trace sources --------------------------------------------------------------------------
    async def _run_traces(self, report: RunReport, guard: RunGuard) -> None:
        assert isinstance(self.source, TraceSource)
        now = self.clock()
        checkpoint = await self._load()
        mark = checkpoint.mark if checkpoint is not None and checkpoint.mark is not None else now - self.config.backfill
        until = now - self.config.settle_delay
        since = max(mark - self.config.overlap, 0.0)
        report.since, report.until = since, until
        if until <= since:
            self._set_lag(now, mark)
            return
        new_mark = until
        covered: float | None = None  # an ordered source: every trace that started before it was read
        bound: SourceError | None = None
        try:
            async for page in self.source.pages(since, until, guard):
                await self.leadership.confirm()
                new_mark, covered = await self._page(page, report, until, new_mark, covered)
                if report.stopped_early:
                    break
                await self.sink.wait_for_room(lambda: self.stopping)  # before the next page is fetched
        except SourceError as exc:
            if exc.kind not in BOUND_KINDS:
                raise
            bound, report.stopped_early = exc, True  # what was read is kept; the error is counted after the save
        if report.stopped_early:  # an ordered source goes on from what it covered; others read it all again
            ordered = getattr(self.source, "ordered", False)
            new_mark = min(new_mark, covered) if ordered and covered is not None else mark
        new_mark = max(new_mark, mark)
        saved = Checkpoint(new_mark, None)
        await self.leadership.confirm()
        await self._call(self.checkpoints.save, self.name, saved, new_mark - self.config.overlap)
        self._checkpoint = saved
        self._set_lag(self.clock(), new_mark)
        if bound is not None:
            raise bound

    async def _page(
        self, page: list[PolledTrace], report: RunReport, until: float, new_mark: float, covered: float | None
    ) -> tuple[float, float | None]:
        """Evaluate one page's unseen, finished traces and remember them; (new mark, start covered so far)."""
        report.listed += len(page)
        fresh = await self._call(self.checkpoints.unseen, self.name, [t.trace_id for t in page])
        report.already_seen += sum(1 for t in page if t.trace_id not in fresh)
        ready: list[PolledTrace] = []
        for trace in page:
            if trace.trace_id not in fresh:
                continue
            if trace.end is not None and trace.end > until:  # still being written
                report.unfinished += 1
                new_mark = min(new_mark, trace.start)
            else:
                ready.append(trace)
        claimed = set(self.sink.claim([t.trace_id for t in ready]))
        chosen = [t for t in ready if t.trace_id in claimed]
        report.received += len(ready) - len(chosen)
        handed = await self.sink.evaluate(chosen, lambda: self.stopping)
        # Seen: those evaluated here and those the receivers have (a stop leaves the rest for the next start).
        left = {t.trace_id for t in chosen} - {t.trace_id for t in handed}
        seen = [(t.trace_id, t.start) for t in ready if t.trace_id not in left]
        await self._call(self.checkpoints.record, self.name, seen)
        await self._write_back(handed)
        report.evaluated += len(handed)
        if self.metrics is not None:
            self.metrics.traces.labels(source=self.name).inc(len(handed))
        if page:
            reached = min([max(t.start for t in page)] + [t.start for t in chosen if t.trace_id in left])
            covered = reached if covered is None else max(covered, reached)
        if left or self.stopping or report.evaluated + report.received >= self.config.max_traces_per_run:
            report.stopped_early = True
        return new_mark, covered

    # --- span feeds -----------------------------------------------------------------------------
    async def _run_feed(self, report: RunReport, guard: RunGuard) -> None:
        """Reads until the feed has no more, each read a page of the guard (its state is the page's key: a feed
        that says "more" but does not move on is a cursor loop)."""
        assert not isinstance(self.source, TraceSource)
        checkpoint = await self._load()
        state = checkpoint.state if checkpoint is not None else None
        what = f"source {self.name}: read"
        guard.start("feed", _state_key(state))
        while not self.stopping:
            guard.page(what)
            spans, logs, state = await self.source.read(state, self.config.max_traces_per_run)
            if spans or logs:
                self.sink.feed(spans, logs)
            report.spans += len(spans)
            saved = Checkpoint(None, state)
            await self.leadership.confirm()  # also before the next read
            await self._call(self.checkpoints.save, self.name, saved, None)
            self._checkpoint = saved
            if self.metrics is not None:
                self.metrics.traces.labels(source=self.name).inc(len(spans))
            if not getattr(self.source, "more", False):
                break
            guard.advance(what, "feed", _state_key(state), len(spans) + len(logs))  # no new state: a loop
        self._last_ok = self.clock()
        if self.metrics is not None:
            self.metrics.lag.labels(source=self.name).set(0)

    # --- helpers --------------------------------------------------------------------------------
    def _forget_checkpoint(self) -> None:
        """This replica takes the source over: another replica moved its checkpoint, read it again."""
        self._checkpoint = None

    async def _load(self) -> Checkpoint | None:
        if self._checkpoint is None:
            self._checkpoint = await self._call(self.checkpoints.load, self.name)
        return self._checkpoint

    async def _call(self, method: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """`method(*args, **kwargs)` of the checkpoint store, on a thread; its failure is a CheckpointError."""
        try:
            return await asyncio.to_thread(method, *args, **kwargs)
        except Exception as exc:
            raise CheckpointError(f"the checkpoint of {self.name} cannot be read or written: {exc}") from exc

    def _set_lag(self, now: float, mark: float) -> None:
        if self.metrics is not None:
            self.metrics.lag.labels(source=self.name).set(max(now - mark, 0.0))

    def _lag_while_failing(self) -> None:
        """After a failed run the lag still grows: now minus the last saved mark (a trace source), or minus the
        last good run (a span feed), or minus where the first run started."""
        now = self.clock()
        first = self._first_run if self._first_run is not None else now
        if isinstance(self.source, TraceSource):
            mark = self._checkpoint.mark if self._checkpoint is not None else None
            self._set_lag(now, mark if mark is not None else first - self.config.backfill)
        else:
            self._set_lag(now, self._last_ok if self._last_ok is not None else first)

    def _account(self, guard: RunGuard, report: RunReport) -> None:
        """The guard's counts into the report; spans cut from traces counted once (kind span_limit); how many
        more warnings the source had after the first of each kind, in one line."""
        report.pages, report.bytes, report.dropped_spans = guard.pages, guard.bytes, guard.dropped_spans
        if guard.dropped_spans and self.metrics is not None:
            self.metrics.errors.labels(source=self.name, kind="span_limit").inc()
        more = {key: count - 1 for key, count in guard.warnings.items() if count > 1}
        if more:
            counts = ", ".join(f"{count} more {key}" for key, count in more.items())
            log.warning("source %s: %s warning(s) in this run (the first of each kind is logged, once a run)",
                        self.name, counts)  # fmt: skip

    def _report(self, kind: str | None, message: str, report: RunReport, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.runs.labels(source=self.name, status="error" if kind else "ok").inc()
            self.metrics.duration.labels(source=self.name).observe(seconds)
            if kind:
                self.metrics.errors.labels(source=self.name, kind=kind).inc()
        if kind and kind != self.last_error_kind:
            log.error("polling %s failed (%s): %s; retried every %gs", self.name, kind, message, self.config.interval)
        elif kind is None and self.last_error_kind is not None:
            log.info("polling %s works again", self.name)
        self.last_error_kind = kind


def _state_key(state: Any) -> str:
    """A span feed's state as a comparable key."""
    return json.dumps(state, sort_keys=True, default=str)
