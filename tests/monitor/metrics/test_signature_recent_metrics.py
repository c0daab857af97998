"""`agent_eval_failure_signatures_new_recent`: the signatures counted new within the new-signature alert's range
(`signatures.window` + its `for`), by (evaluator, service), from the stores' reports and from the process's own
decisions; present from the first count (no scrape history needed), 0 once the range has passed; bounded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from monitor.config import MonitorConfig
from monitor.daemon import Daemon
from monitor.metrics import MetricsExporter
from monitor.metrics.recent_counts import RecentCounts
from tests.monitor.metrics.test_signature_metrics import Clock, metrics, row, tally, value

RECENT = "agent_eval_failure_signatures_new_recent"
NEW = "agent_eval_failure_signatures_new_total"


def test_a_store_report_reads_at_once_and_goes_back_to_0_after_the_range() -> None:
    clock = Clock()
    registry, group = metrics(clock, window=60.0, new_range=90.0)
    assert registry.get_sample_value(RECENT, {"evaluator": "error_free", "service": "shop"}) is None
    group.new("error_free", "shop")  # the first new signature of the pair: the counter is born at 1
    assert value(registry, NEW, evaluator="error_free", service="shop") == 1
    assert value(registry, RECENT, evaluator="error_free", service="shop") == 1
    clock.now += 50
    group.new("error_free", "shop", 2)
    group.new("refusal", "desk")
    assert value(registry, RECENT, evaluator="error_free", service="shop") == 3
    clock.now += 41  # the first one counted 91 s ago, past the range
    assert value(registry, RECENT, evaluator="error_free", service="shop") == 2
    assert value(registry, RECENT, evaluator="refusal", service="desk") == 1
    clock.now += 50
    assert registry.get_sample_value(RECENT, {"evaluator": "error_free", "service": "shop"}) == 0  # stays, at 0
    assert value(registry, NEW, evaluator="error_free", service="shop") == 3


def test_the_range_defaults_to_the_window_and_labels_are_capped() -> None:
    clock = Clock()
    registry, group = metrics(clock, window=60.0)
    for service in ("a", "b", "c"):  # label_value_cap 2: the third is __other__
        group.new("error_free", service)
    assert value(registry, RECENT, evaluator="error_free", service="__other__") == 1
    clock.now += 61
    assert sum(group.recent_new.counts().values()) == 0


def test_without_a_store_the_process_decisions_count_too() -> None:
    clock = Clock()
    registry, group = metrics(clock, decides_new=True, window=60.0)
    group.apply_tally(tally(row("a"), row("a"), row("b")))
    assert value(registry, RECENT, evaluator="error_free", service="shop") == 2
    group.apply_tally(tally(row("a")))  # counted already
    assert value(registry, RECENT, evaluator="error_free", service="shop") == 2


def test_the_memory_is_bounded_and_merges_counts_of_one_second() -> None:
    clock = Clock()
    counts = RecentCounts(100.0, clock, max_events=10)
    for _ in range(1000):
        counts.add(("e", "s"))  # the same second: one entry
    assert counts.counts() == {("e", "s"): 1000}
    for n in range(30):
        clock.now += 1.5
        counts.add(("e", f"s{n % 3}"))
    assert len(counts._events) == 10 and sum(counts.counts().values()) == 10  # the 10 counted last
    assert set(counts.counts()) == {("e", "s"), ("e", "s0"), ("e", "s1"), ("e", "s2")}  # every key stays


def test_the_daemon_gives_it_the_alerts_range(tmp_path: Path) -> None:
    config = MonitorConfig.model_validate(
        {
            "store": {"path": str(tmp_path / "results.db")},
            "evaluation": {"workers": 1},
            "signatures": {"window": "20m"},
            "alerting": {"default_alerts": {"new_failure_signatures": {"for": "5m"}}},
        }
    )
    daemon = Daemon(config)  # built, never started
    try:
        assert daemon.metrics.signatures.recent_new.horizon == 1500.0
    finally:
        asyncio.run(daemon.shutdown(0.5))
    assert MetricsExporter().signatures.recent_new.horizon == 3600.0  # signatures.window's default
