"""Admission control: whether the receivers take an export request or answer with the OTLP throttling response.

Work accepted now is evaluated a quiet period later. The rule bounds, in time, how long past its quiet period
the last trace taken would wait for a worker, at the pool's measured capacity (spans/s): a request is refused
while that wait is over `DELAY_ALLOWANCE_SECONDS`. The schedule counts on the whole measured capacity (see
MEASURED_TRUST: the margin for a host that slows is kept in time, not in rate). Two estimates of when the workers
will have evaluated everything taken, the later of which counts:

- **The schedule** (`finish_at`, a virtual clock): spans that start closing (their trace's root has ended)
  become due a quiet period after they arrive and then take `spans / capacity` of the workers' time, after
  the work ahead of them: `finish_at = max(finish_at, now + quiet_period) + spans / capacity`. In steady
  overload this takes work at the capacity; a burst into an idle daemon is taken up to the allowance's worth
  of work only. (Counting only what is held, as before, took `quiet_period + allowance` of work in one burst;
  it all fell due at once and its last trace waited that long past its quiet period: measured 12-30 s at
  quiet_period 5 s, the first wave of a 20 s run holding a third of its traces.)
- **What is held** (`held_spans / capacity` from now): the spans that will be due within a quiet period,
  due, or in the pool cannot be evaluated faster than that. This corrects the schedule when the capacity
  estimate was high (the first one is measured at start, then every batch corrects it: pool.py), and it counts
  polled traces, which go to the pool directly.

The allowance is 2 s, not 1 s: the capacity estimate moves by 10-20 % from second to second on a loaded
machine, and the pool's backlog of up to the allowance is what keeps the workers busy through those dips
(with 1 s, measured about 15 % less throughput). Traces whose root has not ended are not counted: they may
wait `max_trace_wait`, and memory (`max_pending_spans`) bounds them.

**Polled traces come second.** A poller submits a trace only while the work held, its spans included, stays
under POLL_SHARE of the budget (`poll_room`), so a large poll uses the capacity the receivers leave and never
makes them throttle: under steady receiver overload polled traces wait (the poll lag shows it).

**Backlog**, only while the capacity is unknown (no worker has answered yet): refuse while due traces waiting
for a worker fill the evaluation queue (`queue_size`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from monitor.consumer import IngestOutcome, Outcome, TraceConsumer
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import count_spans
from monitor.engine.pool import EvaluationPool

DELAY_ALLOWANCE_SECONDS = 2.0  # how long past its quiet period a trace may wait for a worker
FIRST_ESTIMATE_TRUST = 0.5  # the share of the capacity measured at start the schedule counts on until a batch is back
# The share of the measured capacity the schedule counts on. Work taken is evaluated a quiet period later, so when
# the host slows after it was taken (a noisy neighbour, a CPU hog), the work already held is late by about
# (quiet_period + allowance) times the drop. A share below 1 kept a margin for that in rate, and paid it all the
# time: at 0.85 the workers idled 15 % of every saturated second while exporters were told to back off (issue
# 44: the daemon's CPU at 78-84 % under a backlog). The margin is kept in time instead: a trace waits at most the
# allowance (2 s) past its quiet period in steady overload, and the p99 bound at saturation (quiet_period + 4 s:
# tests/bench/bench_daemon.py) leaves 2 s more, which absorbs a slowdown of about
# 2 / (quiet_period + allowance + 2), 22 % at the default quiet period, before the bound is missed; past that
# the held-spans estimate throttles at once.
MEASURED_TRUST = 1.0
BACKLOG_RETRY_SECONDS = 0.25  # the retry a refused request is told: the evaluation queue drains in well under 1 s
POLL_SHARE = 0.25  # polled traces are submitted only while the work held is under this share of the budget


class Admission:
    def __init__(
        self,
        assembler: TraceAssembler,
        pool: EvaluationPool,
        *,
        quiet_period: float,
        allowance: float = DELAY_ALLOWANCE_SECONDS,
        measured_trust: float = MEASURED_TRUST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.assembler = assembler
        self.pool = pool
        self.quiet_period = quiet_period
        self.allowance = allowance
        self.measured_trust = measured_trust
        self.budget_seconds = quiet_period + allowance
        self.clock = clock
        self.finish_at = 0.0  # when the workers will have evaluated every closing span taken (the schedule)

    def backlogged(self) -> bool:
        """Due traces waiting for a worker fill the evaluation queue."""
        return self.assembler.due_count + self.pool.waiting >= self.pool.queue_size

    def capacity(self) -> float:
        """The pool's capacity in spans/s as the schedule counts on it: the first estimate measured at start (no real
        batch back yet) at FIRST_ESTIMATE_TRUST (measured on an idle worker, it was 1.5-3x what the same workers
        evaluate while the main process takes in a full-speed burst, and the first wave is taken on it), then the
        measured one at `measured_trust` (see MEASURED_TRUST)."""
        pool = self.pool
        measured = any(slot.rate > 0 for slot in pool.slots)  # by real batches (pool._measure)
        return pool.capacity * (self.measured_trust if measured else FIRST_ESTIMATE_TRUST)

    def budget_spans(self) -> float | None:
        """Spans the daemon may hold; None while the pool's capacity is unknown."""
        capacity = self.pool.capacity
        return capacity * self.budget_seconds if capacity > 0 else None

    def held_spans(self) -> int:
        return self.assembler.spans_closing + self.assembler.spans_due + self.pool.spans_held

    def admitted(self, closing_spans: int) -> None:
        """`closing_spans` started closing now (their root has ended): put them on the schedule."""
        capacity = self.capacity()
        if closing_spans <= 0 or capacity <= 0:
            return
        self.finish_at = max(self.finish_at, self.clock() + self.quiet_period) + closing_spans / capacity

    def wait_seconds(self) -> float | None:
        """How long past its quiet period a trace taken now would wait for a worker (the later of the two
        estimates, see the module docstring); None while the capacity is unknown."""
        capacity = self.capacity()
        if capacity <= 0:
            return None
        now = self.clock()
        finish = max(self.finish_at, now + self.held_spans() / capacity)
        return max(finish - now - self.quiet_period, 0.0)

    def poll_room(self, spans: int) -> bool:
        """Whether a polled trace of `spans` spans may go to the pool now (see the module docstring)."""
        budget = self.budget_spans()
        if budget is None:
            return not self.backlogged()
        held = self.held_spans()
        return held == 0 or held + spans <= budget * POLL_SHARE

    def refuse(self) -> bool:
        """True when the next request must get the throttling answer.

        Only what is already taken is compared with the allowance, so a request is never parsed twice to count
        its spans (a flood of large requests would pay it in memory); the allowance is overrun by at most the
        requests in flight at once.
        """
        wait = self.wait_seconds()
        if wait is None:
            return self.backlogged()
        return wait > self.allowance


class AdmissionGate:
    """The receivers' TraceConsumer, and the one place admission control decides: while `admission.refuse()`, a
    request gets the OTLP throttling answer before anything reads it (not decoded, not logged: under overload the
    CPU goes to evaluation, not to spans we drop); a request taken has the spans it set closing put on the
    schedule (the assembler's closing spans before and after: a trace whose root arrives now counts whole)."""

    def __init__(self, inner: TraceConsumer, admission: Admission) -> None:
        self.inner = inner
        self.admission = admission

    def ingest(self, payload: bytes, *, receiver: str, encoding: str, signal: str = "traces") -> IngestOutcome:
        admission = self.admission
        if admission.refuse():
            return IngestOutcome(
                Outcome.THROTTLED,
                message="evaluation is behind; retry later",
                retry_after_seconds=BACKLOG_RETRY_SECONDS,
                refused=[("throttled", count_spans(payload, encoding, signal))],
            )
        before = admission.assembler.spans_closing
        outcome = self.inner.ingest(payload, receiver=receiver, encoding=encoding, signal=signal)
        admission.admitted(admission.assembler.spans_closing - before)
        return outcome
