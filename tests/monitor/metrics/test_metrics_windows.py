"""Exact windowed statistics: percentiles, mean/stddev, eviction and the per-window sample cap."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics import WindowStore, sanitize_label_value, score_stats, sorted_quantile
from monitor.metrics.labels import OTHER, LabelCapper


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_percentile_linear_interpolation_matches_hand_computed_values() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    # numpy.percentile(values, [5, 50, 95, 99]) with the default "linear" method
    assert sorted_quantile(values, 0.05) == pytest.approx(1.15)
    assert sorted_quantile(values, 0.5) == pytest.approx(2.5)
    assert sorted_quantile(values, 0.95) == pytest.approx(3.85)
    assert sorted_quantile(values, 0.99) == pytest.approx(3.97)
    assert sorted_quantile(values, 0.0) == 1.0
    assert sorted_quantile(values, 1.0) == 4.0
    assert sorted_quantile([7.0], 0.99) == 7.0


def test_score_stats_mean_population_stddev_and_quantiles() -> None:
    stats = score_stats([0.8, 0.2, 0.6, 0.4])
    assert stats is not None
    assert stats.count == 4
    assert stats.mean == pytest.approx(0.5)
    assert stats.stddev == pytest.approx(math.sqrt(0.05))  # ddof=0, like numpy.std
    assert stats.quantiles[0.5] == pytest.approx(0.5)
    assert stats.quantiles[0.05] == pytest.approx(0.23)
    assert score_stats([]) is None


def test_store_evicts_per_window_and_caps_oldest() -> None:
    clock = FakeClock()
    store = WindowStore([300.0, 3600.0], sample_cap=3, clock=clock)
    for score in (0.1, 0.2):
        store.add("e", "s", score, score > 0.15)
    clock.now += 301
    store.add("e", "s", 0.3, True)
    short, long = store.snapshot("e", "s", 300.0), store.snapshot("e", "s", 3600.0)
    assert short.scores == (0.3,)
    assert long.scores == (0.1, 0.2, 0.3)
    assert (long.passed, long.verdicts) == (2, 3)
    store.add("e", "s", 0.4, False)  # long window full: 0.1 drops
    assert store.snapshot("e", "s", 3600.0).scores == (0.2, 0.3, 0.4)
    assert store.sample_count("e", "s", 3600.0) == 3
    clock.now += 3600
    assert store.snapshot("e", "s", 3600.0).verdicts == 0
    assert store.sample_count("e", "s", 3600.0) == 0  # evicted, not just hidden


def test_store_keeps_extra_alert_windows() -> None:
    clock = FakeClock()
    store = WindowStore([300.0], sample_cap=10, clock=clock, extra_windows=lambda ev: [600.0] if ev == "e" else [])
    store.add("e", "s", 0.5, True)
    clock.now += 400
    assert store.snapshot("e", "s", 300.0).verdicts == 0
    assert store.snapshot("e", "s", 600.0).verdicts == 1


def test_sanitize_label_value() -> None:
    assert sanitize_label_value("a\x00b\nc\x1b[31m\x7fd\u0085") == "abc[31md"
    assert sanitize_label_value("x" * 500) == "x" * 128
    assert sanitize_label_value("") == "unknown"
    assert sanitize_label_value("\x01\x02") == "unknown"
    assert sanitize_label_value(None) == "unknown"
    assert sanitize_label_value("  café ") == "café"


def test_label_capper_folds_new_values_into_other() -> None:
    folded: list[str] = []
    cap = LabelCapper(2, folded.append)
    assert [cap("service", v) for v in ("a", "b", "c", "a", "d")] == ["a", "b", OTHER, "a", OTHER]
    assert folded == ["service", "service"]
    assert cap("tool", "c") == "c"  # caps are per label name
    assert cap.distinct("service") == 2


def test_snapshot_ignores_samples_stamped_before_a_clock_step_back() -> None:
    clock = FakeClock(1000.0)
    store = WindowStore([300.0], sample_cap=10, clock=clock)
    store.add("e", "s", 0.9, True)
    clock.now = 500.0  # wall clock stepped back
    store.add("e", "s", 0.1, False)
    clock.now = 850.0  # the 0.1 sample (t=500) is out of the window though queued behind a newer one
    assert store.snapshot("e", "s", 300.0).scores == (0.9,)


@pytest.mark.parametrize("stepped_back", [False, True])
def test_counts_are_the_merged_windows_pass_and_verdict_counts(stepped_back: bool) -> None:
    """What the alert rules read: the counts of `merged`, without the scores (and filtered by time once the
    clock stepped back)."""
    clock = FakeClock(1000.0)
    store = WindowStore([300.0], sample_cap=10, clock=clock)
    store.add("e", "a", 0.9, True)
    store.add("e", "b", None, False)
    store.add("e", "b", 0.5, None)  # no verdict
    if stepped_back:
        clock.now = 500.0
        store.add("e", "a", 0.1, False)
        clock.now = 850.0  # the t=500 sample is out of the window
    keys = [("e", "a", ""), ("e", "b", ""), ("e", "missing", "")]
    merged = store.merged(keys, 300.0)
    counts = store.counts(keys, 300.0)
    assert (counts.passed, counts.verdicts, counts.scores) == (merged.passed, merged.verdicts, ()) == (1, 2, ())
    clock.now = 1300.0  # everything has left
    assert store.counts(keys, 300.0).verdicts == 0


samples = st.tuples(
    st.sampled_from(["a", "b"]),
    st.none() | st.floats(0, 1) | st.integers(0, 1) | st.booleans(),
    st.none() | st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(samples, max_size=12), max_size=8), st.integers(1, 6))
def test_batches_of_samples_leave_the_windows_a_sample_at_a_time_would(batches: list, cap: int) -> None:
    """add_many takes a batch's samples per key at once (issue 44: the main process spent a sample's Python per
    window): what each window holds, its counts and what its ordered reads see are those of a plain model that
    appends the samples one at a time, the oldest dropped at the cap."""
    store = WindowStore([300.0], cap, clock=lambda: 1_000.0)
    model: dict[str, list[tuple[float | None, bool | None]]] = {"a": [], "b": []}
    for batch in batches:
        store.add_many([((evaluator, "svc", ""), score, passed) for evaluator, score, passed in batch])
        for evaluator, score, passed in batch:
            model[evaluator] = [*model[evaluator], (score, passed)][-cap:]
        for evaluator, kept in model.items():
            if not kept:
                continue
            snapshot = store.snapshot(evaluator, "svc", 300.0)
            floats = [math.nan if s is None else float(s) for s, _ in kept]
            assert [x for x in snapshot.scores if x == x] == [x for x in floats if x == x]
            assert snapshot.passed == sum(1 for _, v in kept if v is True)
            assert snapshot.verdicts == sum(1 for _, v in kept if v is not None)
            ordered = store.snapshot(evaluator, "svc", 300.0, ordered=True)
            assert [x for x in ordered.scores if x == x] == sorted(x for x in floats if x == x)
