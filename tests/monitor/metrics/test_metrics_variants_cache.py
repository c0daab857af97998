"""The live comparisons' states are kept between scrapes while no result enters or leaves their windows, and
are always those a fresh computation over the same windows gives: after new results on either side, a new
service, results leaving the window by time or by the sample cap, and after the clock steps back."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.sdk import significance
from evaluators.sdk.significance import rank_terms
from monitor.metrics import MetricsExporter
from monitor.metrics.variant_compare import ComparisonState, VariantComparisons
from tests.evaluators.sdk.test_significance_oracle import oracle_mann_whitney
from tests.monitor.metrics.test_metrics_variants import exporter, send
from tests.support.metrics_scrape import FakeClock, result


def fresh(m: MetricsExporter) -> list[ComparisonState]:
    """The states computed from scratch over the exporter's windows now (no cache to reuse)."""
    comparisons = m.results.comparisons
    return VariantComparisons(comparisons.store, comparisons.specs).states()


def same(states: object, expected: object) -> bool:
    """Equal, NaN fields included (repr round-trips every float and spells NaN one way)."""
    return repr(states) == repr(expected)


def test_a_scrape_with_unchanged_windows_reuses_the_states() -> None:
    m = exporter()
    send(m, "1.4", 190, 10)
    send(m, "1.5", 150, 50)
    [first] = m.results.comparisons.states()
    [again] = m.results.comparisons.states()
    assert again is first
    assert same(again, fresh(m)[0])


def test_a_new_result_on_either_side_or_a_new_service_computes_again() -> None:
    m = exporter()
    send(m, "1.4", 190, 10)
    send(m, "1.5", 150, 50)
    [before] = m.results.comparisons.states()
    for variant, service in (("1.4", "svc"), ("1.5", "svc"), ("1.5", "other")):
        send(m, variant, 0, 1, service=service)
        [after] = m.results.comparisons.states()
        assert after is not before
        assert same(after, fresh(m)[0])
        before = after
    send(m, "1.6", 0, 5)  # a variant in no comparison changes nothing of it
    assert m.results.comparisons.states()[0] is before


def test_results_leaving_the_window_by_time_compute_again() -> None:
    clock = FakeClock()
    m = exporter(clock)
    send(m, "1.4", 100, 0)
    clock.now += 1800
    send(m, "1.4", 0, 100)
    send(m, "1.5", 50, 50)
    [before] = m.results.comparisons.states()
    clock.now += 1801  # the first 100 baseline results leave the hour
    [after] = m.results.comparisons.states()
    assert after is not before
    assert after.baseline.verdicts == 100 and after.baseline.passed == 0
    assert same(after, fresh(m)[0])


def test_after_the_clock_steps_back_every_scrape_computes() -> None:
    clock = FakeClock()
    m = exporter(clock)
    send(m, "1.4", 100, 0)
    send(m, "1.5", 100, 0)
    clock.now -= 600
    send(m, "1.5", 0, 10)  # stamped 600 s before the results ahead of them in the window
    clock.now += 600 + 3300  # those 10 are out of the hour, behind results still in it: filtered, not evicted
    [first] = m.results.comparisons.states()
    assert (first.candidate.verdicts, first.candidate.passed) == (100, 100)
    assert same(first, fresh(m)[0])
    assert m.results.comparisons.states()[0] is not first  # time alone may change filtered windows


operation = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["1.4", "1.5", "1.6"]), st.sampled_from(["a", "b"]),
              st.sampled_from([0.0, 0.5, 1.0, 0.25, 1, 0, True]) | st.floats(0, 1) | st.none(),
              st.booleans() | st.none()),
    st.tuples(st.just("wait"), st.sampled_from([1.0, 900.0, 3601.0])),
    st.tuples(st.just("scrape")),
)  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(st.lists(operation, max_size=40))
def test_cached_states_always_equal_a_fresh_computation(operations: list[tuple[object, ...]]) -> None:
    clock = FakeClock()
    m = exporter(clock, min_samples=2, window_sample_cap=6)
    for op in operations:
        if op[0] == "add":
            _, variant, service, score, passed = op
            result(m, evaluator="error_free", variant=variant, service=service, score=score, passed=passed)
        elif op[0] == "wait":
            clock.now += float(op[1])  # type: ignore[arg-type]
        else:
            check(m)
    check(m)


def check(m: MetricsExporter) -> None:
    """The cached states are the fresh ones, and their rank tests are the oracle's over the windows' scores in
    arrival order."""
    [state] = m.results.comparisons.states()
    assert same([state], fresh(m))
    store, spec = m.results.comparisons.store, state.spec
    for role, snapshot in (("1.4", state.baseline), ("1.5", state.candidate)):
        keys = [key for key in store.keys() if key[0] == spec.evaluator and key[2] == role]  # noqa: SIM118
        assert sorted(store.merged(keys, spec.window_seconds).scores) == sorted(snapshot.scores)
    expected = None
    if state.baseline.scores and state.candidate.scores:
        expected = oracle_mann_whitney(state.baseline.scores, state.candidate.scores)
    assert state.ranks == expected


def count_pooled_sorts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the pooled samples `rank_terms` sorts from now on, wherever it is called from."""
    sizes: list[int] = []

    def counted(baseline: Sequence[float], candidate: Sequence[float]) -> tuple[int, int]:
        sizes.append(len(baseline) + len(candidate))
        return rank_terms(baseline, candidate)

    for module in (significance, sys.modules.get("monitor.metrics.rank_sums")):
        if module is not None:
            monkeypatch.setattr(module, "rank_terms", counted)
    return sizes


def test_a_scrape_after_a_few_new_results_ranks_the_changes_not_every_score(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rank test of full windows is patched with the results that entered and left them: no pooled sort of
    every score, and the same state as one computed afresh."""
    m = exporter(window_sample_cap=500)
    for i in range(500):
        result(m, evaluator="error_free", variant="1.4", service="svc", score=(i % 97) / 97, passed=True)
        result(m, evaluator="error_free", variant="1.5", service="svc", score=(i % 89) / 89, passed=i % 9 > 0)
    m.results.comparisons.states()
    sorts = count_pooled_sorts(monkeypatch)
    for round_ in range(3):
        for i in range(10):  # as many of the oldest leave each side (sample cap)
            result(m, evaluator="error_free", variant="1.4", service="svc", score=i / 10, passed=True)
            result(m, evaluator="error_free", variant="1.5", service="svc", score=round_ / 3, passed=i > 0)
        [state] = m.results.comparisons.states()
        assert sorts == []
        assert same([state], fresh(m))
        sorts.clear()  # (the fresh computation's)
    assert state.ranks is not None and state.ranks.n_baseline == state.ranks.n_candidate == 500
