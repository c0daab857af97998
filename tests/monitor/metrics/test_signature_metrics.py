"""The failure signature metrics: active signatures from the tallies within the window (bounded memory), new ones
from the store's reports, or, with the store disabled, from the process's own memory; labels capped like the
result series'."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from evaluators.signatures import Failure, failure_signature
from monitor.metrics import MetricsExporter
from monitor.metrics.results import ResultMetrics
from monitor.metrics.signatures import SignatureMetrics
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import ResultRow


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def row(tool: str, evaluator: str = "error_free", passed: bool = False) -> ResultRow:
    sig = failure_signature(evaluator, "trace", None, Failure("tool", tool, "http_503"))
    return ResultRow(
        None, None, None, evaluator, "trace", 0.0, passed, None, "", None, 0.0, sig if not passed else None
    )


def tally(*rows: ResultRow, service: str = "shop") -> MetricsTally:
    t = MetricsTally()
    t.add_results(service, "ab" * 16, rows)
    return MetricsTally.from_wire(t.wire())  # as it comes back from a worker


def metrics(clock: Clock, **options: object) -> tuple[CollectorRegistry, SignatureMetrics]:
    registry = CollectorRegistry()
    results = ResultMetrics(registry, label_value_cap=2)
    return registry, SignatureMetrics(registry, results.evaluator_service, clock=clock, **options)  # type: ignore[arg-type]


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_active_counts_distinct_signatures_seen_within_the_window() -> None:
    clock = Clock()
    registry, group = metrics(clock, window=60.0)
    group.apply_tally(tally(row("a"), row("a"), row("b"), row("ok", passed=True)))
    assert value(registry, "agent_eval_failure_signatures_active", evaluator="error_free", service="shop") == 2
    clock.now += 30
    group.apply_tally(tally(row("a")))
    clock.now += 31  # b last seen 61 s ago, a 31 s ago
    assert group.active() == {("error_free", "shop"): 1}
    clock.now += 30
    assert value(registry, "agent_eval_failure_signatures_active", evaluator="error_free", service="shop") == 0
    assert value(registry, "agent_eval_failure_signatures_new_total", evaluator="error_free", service="shop") == 0


def test_memory_is_bounded_and_labels_capped() -> None:
    clock = Clock()
    registry, group = metrics(clock, max_signatures=100)
    for n in range(300):
        group.apply_tally(tally(row(f"tool{n}"), service=f"svc{n % 3}"))
    assert sum(group.active().values()) == 100  # the 100 seen last
    assert set(group.active()) == {("error_free", "svc0"), ("error_free", "svc1"), ("error_free", "__other__")}
    group.new("error_free", "svc2", 2)  # a store's report: capped alike
    assert value(registry, "agent_eval_failure_signatures_new_total", evaluator="error_free", service="__other__") == 2


def test_without_a_store_the_process_decides_new_once_at_min_count_within_the_window() -> None:
    clock = Clock()
    registry, group = metrics(clock, decides_new=True, min_count=2, window=60.0)
    new = lambda: value(registry, "agent_eval_failure_signatures_new_total", evaluator="error_free", service="shop")  # noqa: E731
    group.apply_tally(tally(row("a"), row("late")))
    assert new() == 0
    clock.now += 61
    group.apply_tally(tally(row("late")))  # its second sighting, past the window: never new
    assert new() == 0
    group.apply_tally(tally(row("b"), row("b")))  # two at once
    assert new() == 1
    group.apply_tally(tally(row("b"), row("a")))  # b counted already; a's second is past its window
    assert new() == 1


def test_with_a_store_the_tallies_never_count_new() -> None:
    exporter = MetricsExporter()
    exporter.signatures.apply_tally(tally(row("a")))
    assert (
        exporter.registry.get_sample_value(
            "agent_eval_failure_signatures_new_total", {"evaluator": "error_free", "service": "shop"}
        )
        is None
    )
    assert exporter.signatures.active() == {("error_free", "shop"): 1}
