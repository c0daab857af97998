"""Admission in time: the wait past the quiet period is bounded at the measured capacity (fake clock, real parts)."""

from __future__ import annotations

from types import SimpleNamespace

from monitor.consumer import Outcome
from monitor.engine.admission import (
    DELAY_ALLOWANCE_SECONDS,
    FIRST_ESTIMATE_TRUST,
    MEASURED_TRUST,
    POLL_SHARE,
    Admission,
    AdmissionGate,
)
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.engine.pool import EvaluationPool, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from tests.support.completed_traces import synthetic_requests, synthetic_traces

QUIET = 5.0
CAPACITY = 700.0  # spans/s: one request of 50 seven-span traces is 0.5 s of the workers' time
REQUEST_SPANS = 350


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wired() -> tuple[Clock, TraceAssembler, EvaluationPool, Admission, AdmissionGate]:
    clock = Clock()
    assembler = TraceAssembler(quiet_period=QUIET, clock=clock)
    pool = EvaluationPool(thread_slot(TraceEvaluator([])), lambda tally: None, lambda reason, n: None, clock=clock)
    pool.capacity = CAPACITY  # as if measured (the pool is never started: nothing is evaluated)
    pool.slots[0].rate = CAPACITY  # ... from real batches
    admission = Admission(assembler, pool, quiet_period=QUIET, measured_trust=1.0, clock=clock)  # exact figures
    consumer = AdmissionGate(Ingestor(assembler), admission)
    return clock, assembler, pool, admission, consumer


def send(consumer: AdmissionGate, requests: list[bytes]) -> list[Outcome]:
    return [consumer.ingest(r, receiver="grpc", encoding="protobuf").outcome for r in requests]


def test_a_burst_into_an_idle_daemon_is_taken_up_to_the_allowance_not_the_quiet_period() -> None:
    _, assembler, _, admission, consumer = wired()
    assert DELAY_ALLOWANCE_SECONDS == 2.0
    answers = send(consumer, synthetic_requests(20 * 50))
    # 2 s at 700 spans/s = 1400 spans = 4 requests; the check sees what is taken, so one more gets in.
    assert answers[:5] == [Outcome.ACCEPTED] * 5
    assert set(answers[5:]) == {Outcome.THROTTLED}
    assert assembler.spans_closing == 5 * REQUEST_SPANS  # held alone would allow 700 * (5 + 2) = 4900 spans
    assert admission.wait_seconds() == 5 * REQUEST_SPANS / CAPACITY


def test_the_first_estimate_measured_at_start_is_trusted_by_half_until_a_batch_is_back() -> None:
    """Before any real batch the capacity is the estimate measured at start (an idle worker's, too high under a burst):
    the first wave is taken on half of it; once a batch has measured the workers, on all of it."""
    _, assembler, pool, admission, consumer = wired()
    pool.slots[0].rate = 0.0  # nothing measured yet: `capacity` is the start probe's
    assert FIRST_ESTIMATE_TRUST == 0.5 and admission.capacity() == CAPACITY / 2
    answers = send(consumer, synthetic_requests(20 * 50))
    # 2 s at 350 spans/s = 700 spans = 2 requests; the check sees what is taken, so one more gets in.
    assert answers[:3] == [Outcome.ACCEPTED] * 3 and set(answers[3:]) == {Outcome.THROTTLED}
    assert assembler.spans_closing == 3 * REQUEST_SPANS
    pool.slots[0].rate = CAPACITY  # a batch came back
    assert admission.capacity() == CAPACITY


def test_intake_resumes_at_the_capacity_as_time_passes() -> None:
    clock, assembler, _, admission, consumer = wired()
    send(consumer, synthetic_requests(10 * 50))
    taken = assembler.spans_closing
    clock.now += 0.75  # the workers' schedule moved on by 0.75 s: room for one request (0.5 s of work)
    answers = send(consumer, synthetic_requests(3 * 50, first=100_000))
    assert answers == [Outcome.ACCEPTED, Outcome.THROTTLED, Outcome.THROTTLED]
    assert assembler.spans_closing == taken + REQUEST_SPANS
    clock.now += 10.0  # everything taken is long due (and the pool, never started, holds nothing)
    assert admission.wait_seconds() == 0.0


def test_what_is_held_counts_when_the_capacity_estimate_falls() -> None:
    _, _, pool, admission, consumer = wired()
    assert send(consumer, synthetic_requests(50)) == [Outcome.ACCEPTED]
    pool.capacity = 40.0  # the first batches measured the workers 17x slower than estimated
    # 350 spans at 40 spans/s: 8.75 s from now, 3.75 s past the quiet period; the schedule alone said 0.5 s.
    assert admission.wait_seconds() == REQUEST_SPANS / 40.0 - QUIET
    assert send(consumer, synthetic_requests(50, first=1000)) == [Outcome.THROTTLED]


def test_polled_traces_use_what_the_receivers_leave_and_never_make_them_throttle() -> None:
    _, _, pool, admission, consumer = wired()
    polled = synthetic_traces(300)  # 2100 spans, over the poll share of 1225
    submitted = 0
    for trace in polled:
        if not admission.poll_room(len(trace.spans)):
            break
        pool.submit(trace)
        submitted += 1
    assert 0 < submitted < len(polled)  # the poll stops at its share of the budget...
    assert pool.spans_held <= POLL_SHARE * CAPACITY * (QUIET + DELAY_ALLOWANCE_SECONDS)
    assert send(consumer, synthetic_requests(50, first=1000)) == [Outcome.ACCEPTED]  # ...the receivers still take
    assert not admission.poll_room(7)


def test_only_spans_that_start_closing_go_on_the_schedule() -> None:
    _, assembler, _, admission, consumer = wired()
    admission.admitted(0)
    assert admission.finish_at == 0.0
    send(consumer, synthetic_requests(50))
    assert assembler.spans_closing == REQUEST_SPANS
    assert admission.finish_at == 1000.0 + QUIET + REQUEST_SPANS / CAPACITY


def test_the_capacity_is_weighted_by_work_so_small_batches_do_not_hide_a_backlogs_speed() -> None:
    """A short queue sends many one-trace batches, each paying a fixed cost (hand-off, commit): averaged per
    batch they said half of what the workers do on a backlog, and admission throttled idle workers."""
    _, _, pool, _, _ = wired()
    slot = pool.slots[0]
    slot.rate = slot.busy_spans = slot.busy_seconds = 0.0
    fixed, per_span = 0.003, 0.0004  # seconds per batch, per span
    backlog_rate = 448 / (fixed + 448 * per_span)  # a full batch of 64 seven-span traces: ~2,460 spans/s
    for _ in range(20):
        for _ in range(10):
            pool._measure(slot, 7, fixed + 7 * per_span)  # one trace
        pool._measure(slot, 448, fixed + 448 * per_span)
    mean_of_batch_rates = (10 * 7 / (fixed + 7 * per_span) + backlog_rate) / 11
    assert mean_of_batch_rates < 0.6 * backlog_rate  # what the old estimate converged to
    assert 0.85 * backlog_rate < pool.capacity <= backlog_rate


def test_under_a_sustained_backlog_intake_keeps_the_workers_busy_all_the_time() -> None:
    """By default the schedule counts on the whole measured capacity: in steady overload it takes work at the
    workers' rate, so they never idle while exporters are told to back off (a margin in rate, 0.85, left 15 % of
    every saturated second idle). The margin for a host that slows is the allowance's, in time. Simulated: workers
    that evaluate CAPACITY spans/s of what is due, requests of REQUEST_SPANS offered every 0.1 s."""
    clock, _, pool, _, _ = wired()
    held = SimpleNamespace(spans_closing=0, spans_due=0, due_count=0)
    admission = Admission(held, pool, quiet_period=QUIET, clock=clock)  # type: ignore[arg-type]
    assert admission.capacity() == CAPACITY * MEASURED_TRUST
    closing: list[tuple[float, int]] = []  # (due at, spans) taken, not yet due
    busy = evaluated = 0.0
    for step in range(1, 601):  # 60 s of overload
        clock.now += 0.1
        while closing and closing[0][0] <= clock.now:
            held.spans_closing -= closing[0][1]
            held.spans_due += closing.pop(0)[1]
        done = min(held.spans_due, CAPACITY * 0.1)
        held.spans_due -= done
        if step > 200:  # past the first burst and its quiet period
            busy, evaluated = busy + 0.1, evaluated + done
        while not admission.refuse():
            closing.append((clock.now + QUIET, REQUEST_SPANS))
            held.spans_closing += REQUEST_SPANS
            admission.admitted(REQUEST_SPANS)
    assert evaluated / busy >= 0.97 * CAPACITY  # the workers' time, all used
    assert admission.wait_seconds() <= DELAY_ALLOWANCE_SECONDS + REQUEST_SPANS / CAPACITY
