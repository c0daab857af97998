"""Admission control: only real shortage is refused, never traces waiting out their quiet period."""

from __future__ import annotations

from monitor.consumer import IngestOutcome, Outcome
from monitor.engine.admission import DELAY_ALLOWANCE_SECONDS, Admission, AdmissionGate
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.engine.pool import EvaluationPool, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from tests.bench.synthetic import bench_trace_spans, export_request
from tests.support.completed_traces import synthetic_requests


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wired(queue_size: int = 256, quiet: float = 5.0):
    clock = Clock()
    assembler = TraceAssembler(quiet_period=quiet, clock=clock)
    pool = EvaluationPool(
        thread_slot(TraceEvaluator([])), lambda outcomes: None, lambda r, n: None, queue_size=queue_size
    )
    admission = Admission(assembler, pool, quiet_period=quiet, measured_trust=1.0, clock=clock)  # exact figures
    metrics = MetricsExporter()
    ingestor = Counted(AdmissionGate(Ingestor(assembler), admission), metrics)
    return clock, assembler, pool, admission, ingestor, metrics


class Counted:
    """The admission gate and the Ingestor, with their answers counted as the gRPC receiver counts them."""

    def __init__(self, ingestor: AdmissionGate, metrics: MetricsExporter) -> None:
        self.ingestor, self.telemetry = ingestor, metrics.intake.receiver("grpc")

    def ingest(self, payload: bytes, *, receiver: str, encoding: str) -> IngestOutcome:
        outcome = self.ingestor.ingest(payload, receiver=receiver, encoding=encoding)
        self.telemetry.ingested(outcome)
        return outcome


def refused(metrics: MetricsExporter) -> float:
    return sum(
        s.value
        for f in metrics.registry.collect()
        if f.name == "agent_monitor_spans_refused"
        for s in f.samples
        if s.labels.get("reason") == "throttled"
    )


def test_a_burst_of_5000_traces_in_their_quiet_period_is_accepted_whole() -> None:
    clock, assembler, _pool, admission, ingestor, metrics = wired(queue_size=256, quiet=5.0)
    outcomes = [ingestor.ingest(r, receiver="grpc", encoding="protobuf") for r in synthetic_requests(5000)]
    assert {o.outcome for o in outcomes} == {Outcome.ACCEPTED}
    assert sum(o.accepted for o in outcomes) == 5000 * 7
    assert refused(metrics) == 0 and assembler.traces_pending == 5000
    # Once they are due and nothing evaluates them, they are a backlog far beyond the queue: now refuse.
    clock.now += 5.5
    assembler.collect_due()
    assert assembler.due_count == 5000 and admission.backlogged()
    late = ingestor.ingest(synthetic_requests(1, first=9000)[0], receiver="grpc", encoding="protobuf")
    assert late.outcome is Outcome.THROTTLED and late.retry_after_seconds > 0
    assert refused(metrics) == 7


def test_due_traces_under_the_queue_size_do_not_throttle() -> None:
    clock, assembler, _pool, admission, ingestor, _ = wired(queue_size=256)
    for request in synthetic_requests(255):
        ingestor.ingest(request, receiver="grpc", encoding="protobuf")
    clock.now += 6
    assert assembler.collect_due() == 255 and not admission.backlogged()
    accepted = ingestor.ingest(synthetic_requests(1, first=9000)[0], receiver="grpc", encoding="protobuf")
    assert accepted.outcome is Outcome.ACCEPTED


def test_work_budget_bounds_what_will_be_due_within_a_quiet_period() -> None:
    clock, assembler, pool, admission, ingestor, _ = wired(queue_size=256, quiet=5.0)
    pool.capacity = 600.0  # spans/s: a budget of 600 * (5 + 2) = 4200 spans = 600 traces
    pool.slots[0].rate = 600.0  # measured by real batches (not the start probe's first estimate)
    assert DELAY_ALLOWANCE_SECONDS == 2.0
    answers = []
    for request in synthetic_requests(700):  # 350 spans each, 0.58 s of work: a second apart, the schedule keeps up
        answers.append(ingestor.ingest(request, receiver="grpc", encoding="protobuf").outcome)
        clock.now += 1.0  # ... and what is held (never taken by a worker here) is what binds
    assert answers[: 600 // 50] == [Outcome.ACCEPTED] * (600 // 50)
    assert Outcome.THROTTLED in answers
    assert admission.budget_spans() < assembler.spans_closing <= admission.budget_spans() + 350  # one request over


def test_traces_whose_root_has_not_ended_do_not_use_the_work_budget() -> None:
    _, assembler, pool, _admission, ingestor, _ = wired(queue_size=256, quiet=5.0)
    pool.capacity = 700.0
    open_traces = [
        export_request([s for s in bench_trace_spans(n.to_bytes(16, "big"), 10**18, n) if s.parent_span_id])
        for n in range(1, 201)
    ]  # every span but the root: these traces wait up to max_trace_wait, bounded by memory only
    answers = [ingestor.ingest(r.SerializeToString(), receiver="grpc", encoding="protobuf") for r in open_traces]
    assert {a.outcome for a in answers} == {Outcome.ACCEPTED}
    assert assembler.spans_held == 200 * 6 and assembler.spans_closing == 0


def test_an_empty_daemon_takes_one_request_larger_than_the_budget() -> None:
    _, assembler, pool, _admission, ingestor, _ = wired()
    pool.capacity = 1.0
    answer = ingestor.ingest(synthetic_requests(50)[0], receiver="grpc", encoding="protobuf")
    assert answer.outcome is Outcome.ACCEPTED and assembler.spans_held == 350
