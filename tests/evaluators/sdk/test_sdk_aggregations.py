"""Aggregations against hand-computed values (percentiles as numpy.percentile's default linear method)."""

from __future__ import annotations

import math

import pytest

from evaluators.sdk import (
    EvaluationRecord,
    aggregate,
    count,
    maximum,
    mean,
    median,
    minimum,
    pass_rate,
    percentile,
    skip_counts,
    stdev,
    summarize,
    variance,
)
from evaluators.sdk.aggregations import compute, is_aggregation

SCORES = [0.1, 0.4, 0.2, 0.9, 0.5]  # sorted: 0.1 0.2 0.4 0.5 0.9


def rec(
    score: float | None = None,
    passed: bool | None = None,
    *,
    evaluator: str = "e",
    reason: str | None = None,
    agent: str | None = None,
    model: str | None = None,
    service: str | None = None,
) -> EvaluationRecord:
    return EvaluationRecord(
        trace_id="t",
        evaluator=evaluator,
        score=None if reason else score,
        passed=None if reason else passed,
        skipped=reason is not None,
        skip_reason=reason,
        agent_name=agent,
        model=model,
        service=service,
    )


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        # numpy.percentile(values, q): index (n-1)*q/100 between closest ranks
        ([1, 2, 3, 4], 50, 2.5),
        ([1, 2, 3, 4], 75, 3.25),
        ([1, 2, 3, 4], 90, 3.7),
        ([1, 2, 3, 4], 95, 3.85),
        ([1, 2, 3, 4], 99, 3.97),
        ([1, 2, 3, 4], 0, 1.0),
        ([1, 2, 3, 4], 100, 4.0),
        (SCORES, 50, 0.4),
        (SCORES, 75, 0.5),
        (SCORES, 90, 0.74),
        (SCORES, 95, 0.82),
        (SCORES, 99, 0.884),
        ([0, 10], 25, 2.5),
        ([7], 99, 7.0),
        ([5, 1, 3], 50, 3.0),
    ],
)
def test_percentiles_match_numpy_linear(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected, abs=1e-12)


def test_basic_statistics() -> None:
    assert count(SCORES) == 5
    assert mean(SCORES) == pytest.approx(0.42)
    assert median(SCORES) == pytest.approx(0.4)
    assert median([1, 2, 3, 4]) == 2.5
    assert minimum(SCORES) == 0.1
    assert maximum(SCORES) == 0.9
    # deviations from 0.42: -0.32 -0.22 -0.02 0.08 0.48 → squares sum 0.388 → / (5 - 1)
    assert variance(SCORES) == pytest.approx(0.097)
    assert stdev(SCORES) == pytest.approx(math.sqrt(0.097))
    assert stdev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.138089935299395)  # sample, not population (2.0)


def test_empty_and_single_inputs_give_none() -> None:
    for function in (mean, median, minimum, maximum, variance, stdev):
        assert function([]) is None
    assert percentile([], 95) is None
    assert count([]) == 0
    assert (variance([0.5]), stdev([0.5])) == (None, None)
    assert pass_rate([]) is None
    assert skip_counts([]) == {}
    assert aggregate([]) == []
    empty = summarize([], evaluator="e")
    assert (empty.total, empty.count, empty.mean, empty.p95, empty.pass_rate) == (0, 0, None, None, None)


def test_percentile_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="percentile"):
        percentile([1.0], 101)


def test_skips_are_counted_apart_and_left_out_of_statistics() -> None:
    records = [
        rec(0.2, False),
        rec(0.8, True),
        rec(1.0, True),
        rec(reason="needs_ground_truth"),
        rec(reason="needs_ground_truth"),
        rec(reason="error"),
    ]
    assert skip_counts(records) == {"error": 1, "needs_ground_truth": 2}
    assert pass_rate(records) == pytest.approx(2 / 3)
    [summary] = aggregate(records)
    assert (summary.total, summary.count, summary.skipped) == (6, 3, 3)
    assert (summary.passed, summary.failed) == (2, 1)
    assert summary.mean == pytest.approx(2.0 / 3)
    assert summary.median == 0.8
    assert (summary.min, summary.max) == (0.2, 1.0)
    assert summary.p90 == pytest.approx(0.96)  # index 1.8 between 0.8 and 1.0
    assert summary.pass_rate == pytest.approx(2 / 3)
    assert summary.skip_counts == {"error": 1, "needs_ground_truth": 2}


def test_only_skips_give_no_statistics() -> None:
    [summary] = aggregate([rec(reason="timeout")])
    assert summary.skip_counts == {"timeout": 1}
    assert (summary.count, summary.mean, summary.pass_rate, summary.p50) == (0, None, None, None)


def test_records_without_a_verdict_are_left_out_of_the_pass_rate() -> None:
    assert pass_rate([rec(0.9, True), rec(0.1, None)]) == 1.0


def test_aggregate_per_evaluator_and_group() -> None:
    records = [
        rec(1.0, True, evaluator="b", agent="planner", model="m1", service="svc"),
        rec(0.0, False, evaluator="b", agent="planner", model="m2", service="svc"),
        rec(0.5, True, evaluator="b", agent="booker", model="m1", service="svc"),
        rec(0.4, False, evaluator="a", agent=None, model="m1", service="svc"),
        rec(evaluator="a", agent="booker", reason="no_data"),
    ]
    overall = aggregate(records)
    assert [(s.evaluator, s.group, s.count, s.skipped) for s in overall] == [("a", None, 1, 1), ("b", None, 3, 0)]
    assert overall[1].mean == pytest.approx(0.5)

    by_agent = aggregate(records, group_by="agent")
    assert [(s.evaluator, s.group, s.count, s.skipped) for s in by_agent] == [
        ("a", None, 1, 0),
        ("a", "booker", 0, 1),
        ("b", "booker", 1, 0),
        ("b", "planner", 2, 0),
    ]
    assert all(s.group_by == "agent" for s in by_agent)
    planner = by_agent[3]
    assert (planner.mean, planner.pass_rate, planner.stdev) == (0.5, 0.5, pytest.approx(math.sqrt(0.5)))

    by_model = {(s.evaluator, s.group): s for s in aggregate(records, group_by="model")}
    assert by_model[("b", "m1")].mean == pytest.approx(0.75)
    assert by_model[("b", "m2")].pass_rate == 0.0
    assert [s.group for s in aggregate(records, group_by="service")] == [None, "svc", "svc"]

    with pytest.raises(ValueError, match="group_by"):
        aggregate(records, group_by="tool")  # type: ignore[arg-type]


def test_named_aggregations() -> None:
    records = [rec(s, s >= 0.5) for s in SCORES] + [rec(reason="error")]
    assert compute("mean", records) == pytest.approx(0.42)
    assert compute("p90", records) == pytest.approx(0.74)
    assert compute("p12.5", records) == pytest.approx(0.15)  # index 0.5 between 0.1 and 0.2
    assert compute("count", records) == 5
    assert compute("pass_rate", records) == pytest.approx(0.4)
    assert all(is_aggregation(n) for n in ("count", "mean", "median", "min", "max", "stdev", "variance", "p99"))
    assert not any(is_aggregation(n) for n in ("p101", "avg", "p"))
    with pytest.raises(ValueError, match="unknown aggregation"):
        compute("avg", records)
