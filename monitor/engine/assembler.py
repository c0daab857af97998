"""TraceAssembler: groups spans by trace id and decides when a trace is complete.

A trace is complete when its root span has ended and no span arrived for `quiet_period`, or when
`max_trace_wait` has passed since its first span. Deadlines sit in a heap (lazily re-armed), so a
tick costs O(k log n) for k due traces, never a scan of every pending trace.

Completed traces move to a due queue (`collect_due`) and stay counted against `max_pending_spans`
and `max_pending_bytes` until the evaluation engine takes them (`take_due`); `due_count` is the
evaluation backlog that admission control looks at. Traces still in their quiet period are never
part of it. Bytes are an estimate of what the decoded records hold (`span_size`): a few large spans
of a trace whose root never ends are bounded by bytes long before they reach the span count.

A root is a span with no parent id, or a SERVER/CONSUMER span whose parent is not in the trace
(the entry point of a service called by a remote parent). A span whose parent merely has not
arrived yet is not a root: exporters send children before their parents end.

Not thread-safe: owned by the event loop.
"""

from __future__ import annotations

import heapq
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from evaluators.traces.raw_spans import ReceivedSpan
from evaluators.traces.records import Attributes, LogRecord
from monitor.config.pipeline import AssemblyConfig
from monitor.engine.external_results import is_own
from monitor.engine.span_size import log_bytes, resource_bytes, span_bytes

_DEFAULTS = AssemblyConfig()
_ENTRY_KINDS = (2, 5)  # SERVER, CONSUMER


@dataclass(slots=True)
class PendingTrace:
    trace_id: str
    first_seen: float
    last_seen: float
    spans: dict[str, ReceivedSpan] = field(default_factory=dict)
    logs: list[LogRecord] = field(default_factory=list)
    root_ended: bool = False
    size_bytes: int = 0  # estimated memory of its spans and log records (span_size)

    def deadline(self, quiet_period: float, max_wait: float) -> float:
        hard = self.first_seen + max_wait
        if self.root_ended:
            return min(self.last_seen + quiet_period, hard)
        return hard


@dataclass(slots=True)
class AddResult:
    """What became of the spans of one export request."""

    accepted: int = 0
    duplicates: int = 0
    late: int = 0
    over_trace_cap: int = 0

    @property
    def rejected(self) -> int:
        return self.over_trace_cap


@dataclass(slots=True)
class CompletedTrace:
    trace_id: str
    spans: Sequence[ReceivedSpan]  # raw spans are decoded by the worker that evaluates the trace
    reason: str  # "quiet" | "max_wait" | "shutdown"
    first_seen: float
    completed_at: float
    logs: list[LogRecord] = field(default_factory=list)
    last_seen: float = 0.0
    on_done: Callable[[], None] | None = None  # called once the pool is done with it (a polled trace's waiter)
    size_bytes: int = 0  # what it counted against max_pending_bytes while in the assembler


# The `assembly:` options the assembler takes as they are.
_CONFIGURED = (
    "quiet_period", "max_trace_wait", "max_pending_spans", "max_pending_bytes", "max_spans_per_trace",
    "evaluated_trace_memory", "late_span_window",
)  # fmt: skip


class TraceAssembler:
    def __init__(
        self,
        *,
        quiet_period: float = _DEFAULTS.quiet_period,
        max_trace_wait: float = _DEFAULTS.max_trace_wait,
        max_pending_spans: int = _DEFAULTS.max_pending_spans,
        max_pending_bytes: int = _DEFAULTS.max_pending_bytes,
        max_spans_per_trace: int = _DEFAULTS.max_spans_per_trace,
        evaluated_trace_memory: int = _DEFAULTS.evaluated_trace_memory,
        late_span_window: float = _DEFAULTS.late_span_window,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """The defaults are `assembly:`'s (AssemblyConfig, the one source of them)."""
        self.quiet_period = quiet_period
        self.max_trace_wait = max_trace_wait
        self.max_pending_spans = max_pending_spans
        self.max_pending_bytes = max_pending_bytes
        self.max_spans_per_trace = max_spans_per_trace
        self.evaluated_trace_memory = evaluated_trace_memory
        self.late_span_window = late_span_window
        self.clock = clock
        self._pending: dict[str, PendingTrace] = {}
        self._heap: list[tuple[float, str]] = []
        self._evaluated: OrderedDict[str, float] = OrderedDict()
        self._due: deque[CompletedTrace] = deque()
        self.spans_due = 0  # spans and log records of the traces in the due queue
        self.spans_pending = 0
        self.spans_closing = 0  # spans of pending traces whose root has ended: due within the quiet period
        self.logs_pending = 0
        self.bytes_pending = 0  # estimated bytes of the pending traces...
        self.bytes_due = 0  # ...and of the traces in the due queue
        self.late_spans = 0
        self.duplicate_spans = 0

    @classmethod
    def from_config(cls, config: AssemblyConfig, clock: Callable[[], float] = time.monotonic) -> TraceAssembler:
        """The assembler of the `assembly:` section."""
        return cls(**{name: getattr(config, name) for name in _CONFIGURED}, clock=clock)

    @property
    def traces_pending(self) -> int:
        """Traces held: still assembling, or complete and waiting in the due queue."""
        return len(self._pending) + len(self._due)

    @property
    def spans_held(self) -> int:
        """Spans held: of traces still assembling and of complete traces in the due queue."""
        return self.spans_pending + self.spans_due

    @property
    def due_count(self) -> int:
        """Complete traces waiting for the evaluation engine (as of the last `collect_due`)."""
        return len(self._due)

    @property
    def bytes_held(self) -> int:
        """Estimated bytes held: of traces still assembling and of complete traces in the due queue."""
        return self.bytes_pending + self.bytes_due

    def limit_crossed(self, span_count: int, size_bytes: int = 0) -> str | None:
        """Backpressure: the limit ("spans" or "bytes") that accepting `span_count` more spans or log records
        of `size_bytes` (estimated) would pass; None when they fit. An empty assembler takes any one request (its
        size is capped by the receivers), so a request larger than a whole limit is not refused forever."""
        held = self.spans_pending + self.logs_pending + self.spans_due
        if held == 0:
            return None
        if held + span_count > self.max_pending_spans:
            return "spans"
        if self.bytes_held + size_bytes > self.max_pending_bytes:
            return "bytes"
        return None

    def has_room_for(self, span_count: int, size_bytes: int = 0) -> bool:
        """True when neither max_pending_spans nor max_pending_bytes would be passed (see `limit_crossed`)."""
        return self.limit_crossed(span_count, size_bytes) is None

    def add(self, spans: Sequence[ReceivedSpan], sizes: list[int] | None = None) -> AddResult:
        """Take the spans of one request (any order, any traces). The caller checks has_room_for first.

        `sizes`: each span's `span_bytes`, when the caller has them already."""
        now = self.clock()
        result = AddResult()
        charge = _ResourceCharge()
        if sizes is None:
            sizes = [span_bytes(span) for span in spans]
        for span, size in zip(spans, sizes, strict=True):
            trace_id = span.trace_id
            pending = self._pending_for(trace_id, now)
            if pending is None:
                self.late_spans += 1
                result.late += 1
                continue
            if span.span_id in pending.spans:
                self.duplicate_spans += 1
                result.duplicates += 1
                continue
            if len(pending.spans) >= self.max_spans_per_trace:
                result.over_trace_cap += 1
                continue
            pending.spans[span.span_id] = span
            pending.last_seen = now
            size += charge(trace_id, span.resource_attributes)
            pending.size_bytes += size
            self.bytes_pending += size
            self.spans_pending += 1
            result.accepted += 1
            if pending.root_ended:
                self.spans_closing += 1
            elif self._is_ended_root(span, pending):
                pending.root_ended = True
                self.spans_closing += len(pending.spans)
                heapq.heappush(self._heap, (pending.deadline(self.quiet_period, self.max_trace_wait), trace_id))
        return result

    def add_logs(self, logs: Sequence[LogRecord], sizes: list[int] | None = None) -> int:
        """Hold log records (GenAI content and usage events) until their trace completes; how many were held (none
        of an evaluated trace, none of the daemon's own exported results)."""
        now = self.clock()
        held = 0
        charge = _ResourceCharge()
        if sizes is None:
            sizes = [log_bytes(record) for record in logs]
        for record, size in zip(logs, sizes, strict=True):
            if is_own(record):  # the daemon's own exported results (exported to a receiver, or polled) hold nothing
                continue
            pending = self._pending_for(record.trace_id, now)
            if pending is not None:
                pending.logs.append(record)
                size += charge(record.trace_id, record.resource_attributes)
                pending.size_bytes += size
                self.bytes_pending += size
                self.logs_pending += 1
                held += 1
        return held

    def _pending_for(self, trace_id: str, now: float) -> PendingTrace | None:
        """The pending trace, created on first sight; None when the trace was already evaluated."""
        pending = self._pending.get(trace_id)
        if pending is None:
            if self._was_evaluated(trace_id, now):
                return None
            pending = PendingTrace(trace_id, now, now)
            self._pending[trace_id] = pending
            heapq.heappush(self._heap, (pending.deadline(self.quiet_period, self.max_trace_wait), trace_id))
        return pending

    @staticmethod
    def _is_ended_root(span: ReceivedSpan, pending: PendingTrace) -> bool:
        if span.end_time_unix_nano <= 0:
            return False
        if not span.parent_span_id:
            return True
        return span.kind in _ENTRY_KINDS and span.parent_span_id not in pending.spans

    def assembling(self, trace_id: str) -> bool:
        """Whether spans of the trace are held, still assembling."""
        return trace_id in self._pending

    def claim(self, trace_ids: list[str]) -> list[str]:
        """The ids of `trace_ids` a poller may evaluate: those neither assembling from received spans nor
        evaluated within the late-span window; each is remembered as evaluated (spans of it received later are
        late, dropped), so a trace that arrives both ways is evaluated once."""
        now = self.clock()
        claimed = []
        for trace_id in trace_ids:
            if trace_id in self._pending or self._was_evaluated(trace_id, now):
                continue
            self._remember(trace_id, now)
            claimed.append(trace_id)
        return claimed

    def evaluated_already(self, trace_id: str) -> bool:
        """Whether the trace was evaluated within the late-span window and nothing of it is assembling again."""
        return trace_id not in self._pending and self._was_evaluated(trace_id, self.clock())

    def _was_evaluated(self, trace_id: str, now: float) -> bool:
        seen = self._evaluated.get(trace_id)
        return seen is not None and now - seen <= self.late_span_window

    def collect_due(self, now: float | None = None) -> int:
        """Move every trace whose deadline has passed into the due queue; returns the queue's length."""
        now = self.clock() if now is None else now
        while self._heap and self._heap[0][0] <= now:
            _, trace_id = heapq.heappop(self._heap)
            pending = self._pending.get(trace_id)
            if pending is None:
                continue  # a stale heap entry for a trace already completed
            deadline = pending.deadline(self.quiet_period, self.max_trace_wait)
            if deadline > now:
                heapq.heappush(self._heap, (deadline, trace_id))
                continue
            hard = now >= pending.first_seen + self.max_trace_wait
            reason = "quiet" if pending.root_ended and not hard else "max_wait"
            completed = self._complete(pending, reason, now)
            self.spans_due += len(completed.spans) + len(completed.logs)
            self.bytes_due += completed.size_bytes
            self._due.append(completed)
        return len(self._due)

    def take_due(self, limit: int | None = None) -> list[CompletedTrace]:
        """Up to `limit` traces from the due queue, oldest first (they stop counting against memory)."""
        count = len(self._due) if limit is None else max(min(limit, len(self._due)), 0)
        taken = [self._due.popleft() for _ in range(count)]
        self.spans_due -= sum(len(c.spans) + len(c.logs) for c in taken)
        self.bytes_due -= sum(c.size_bytes for c in taken)
        return taken

    def flush_all(self) -> list[CompletedTrace]:
        """Complete every pending trace now, as it is (used at shutdown)."""
        now = self.clock()
        done = self.take_due()
        done += [self._complete(p, "shutdown", now) for p in list(self._pending.values())]
        self._heap.clear()
        return done

    def _complete(self, pending: PendingTrace, reason: str, now: float) -> CompletedTrace:
        del self._pending[pending.trace_id]
        self.spans_pending -= len(pending.spans)
        if pending.root_ended:
            self.spans_closing -= len(pending.spans)
        self.logs_pending -= len(pending.logs)
        self.bytes_pending -= pending.size_bytes
        self._remember(pending.trace_id, now)
        spans = list(pending.spans.values())
        return CompletedTrace(
            pending.trace_id,
            spans,
            reason,
            pending.first_seen,
            now,
            pending.logs,
            pending.last_seen,
            size_bytes=pending.size_bytes,
        )

    def _remember(self, trace_id: str, now: float) -> None:
        evaluated = self._evaluated
        evaluated[trace_id] = now
        evaluated.move_to_end(trace_id)
        while len(evaluated) > self.evaluated_trace_memory:
            evaluated.popitem(last=False)
        # Forget ids older than the late-span window (oldest first, stop at the first fresh one).
        while evaluated:
            _, seen = next(iter(evaluated.items()))
            if now - seen <= self.late_span_window:
                break
            evaluated.popitem(last=False)


class _ResourceCharge:
    """The bytes of a resource's attributes, charged once per trace within one `add` call.

    The spans of one resource in one request share one attributes dict, kept alive by each trace that holds
    one of them. Consecutive spans mostly share trace and resource: those cost one identity check."""

    __slots__ = ("_charged", "_last", "_sizes")

    def __init__(self) -> None:
        self._charged: set[tuple[str, int]] = set()
        self._sizes: dict[int, int] = {}
        self._last: tuple[str, Attributes | None] = ("", None)

    def __call__(self, trace_id: str, resource: Attributes) -> int:
        if not resource:
            return 0
        last_trace, last_resource = self._last
        if resource is last_resource and trace_id == last_trace:
            return 0
        self._last = (trace_id, resource)
        key = (trace_id, id(resource))
        if key in self._charged:
            return 0
        self._charged.add(key)
        size = self._sizes.get(id(resource))
        if size is None:
            size = self._sizes[id(resource)] = resource_bytes(resource)
        return size
