"""The dashboard's *Agreement with reviewers* row (issue 28): its panels, units, queries and link, and its queries
run by `promtool` over written `agent_eval_reviews_total` series: reviews by evaluator, verdict and agreement over
the range, and the false-alarm share of reviewed failures (0 for an evaluator whose failures were all confirmed, no
point for one without a reviewed failure; reviewed passes and skips left out) and the miss share of reviewed
passes. The live dashboard test (tests/deploy/test_dashboard.py) writes no review: the series may be absent there."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.test_dashboard import analyze, contract, load_dashboard, panel, row_panels
from tests.support.alert_rules import cumulative, promtool, series

ROW = "Agreement with reviewers"
REVIEW_PANELS = [
    "Reviews in the time range by agreement",
    "False-alarm share of reviewed failures",
    "Reviews per hour by agreement",
    "Miss share of reviewed passes",
]
METRIC = "agent_eval_reviews_total"
EXACT = 1 / 1024  # a step every float sum lands on exactly
FILTER = 'evaluator=~"$evaluator"'


def _expr(title: str) -> str:
    [target] = panel(load_dashboard(), title)["targets"]
    return target["expr"]


def test_the_row_has_its_panels_and_reads_the_reviews_counter_of_the_contract():
    assert row_panels(ROW) == REVIEW_PANELS
    documented = contract()
    assert documented[METRIC] == frozenset({"evaluator", "verdict", "agreement"})
    for title in REVIEW_PANELS:
        selectors, _ = analyze(_expr(title))
        assert {s.metric for s in selectors} == {METRIC}, title
        for s in selectors:
            assert ("evaluator", "=~", "$evaluator") in s.matchers, title


def test_the_queries_units_and_the_link_to_the_failing_results():
    assert _expr("Reviews in the time range by agreement") == (
        f"sum by (evaluator, verdict, agreement) (increase({METRIC}{{{FILTER}}}[$__range]))"
    )
    assert (
        _expr("Reviews per hour by agreement")
        == f"sum by (agreement) (rate({METRIC}{{{FILTER}}}[$__rate_interval])) * 3600"
    )
    for title, verdict in (
        ("False-alarm share of reviewed failures", "fail"),
        ("Miss share of reviewed passes", "pass"),
    ):
        selectors, _ = analyze(_expr(title))
        assert {("verdict", "=", verdict)} <= {m for s in selectors for m in s.matchers}, title
        assert ("agreement", "=", "disagree") in selectors[0].matchers, title
        defaults = panel(load_dashboard(), title)["fieldConfig"]["defaults"]
        assert (defaults["unit"], defaults["min"], defaults["max"]) == ("percentunit", 0, 1)
    [link] = panel(load_dashboard(), "False-alarm share of reviewed failures")["fieldConfig"]["defaults"]["links"]
    assert link["url"].startswith("${review_url}/review/results?evaluator=${__field.labels.evaluator}&outcome=fail")
    assert panel(load_dashboard(), "Reviews in the time range by agreement")["targets"][0]["instant"] is True


def _promtool(tmp_path: Path, cases: list[dict]) -> None:
    minutes = 30

    def counter(evaluator: str, verdict: str, agreement: str, per_minute: float) -> dict:
        return series(METRIC, cumulative((minutes, per_minute)), evaluator=evaluator, verdict=verdict,
                      agreement=agreement)  # fmt: skip

    inputs = [
        counter("faithful", "fail", "agree", 3),
        counter("faithful", "fail", "disagree", 1),  # a false alarm in four reviewed failures
        counter("faithful", "pass", "agree", 1),
        counter("faithful", "pass", "disagree", 1),  # a miss in two reviewed passes
        counter("faithful", "skip", "disagree", 5),  # skips: in no share
        counter("tool_errors", "fail", "agree", 2),  # every reviewed failure confirmed
        counter("polite", "pass", "agree", 2),  # no reviewed failure: no false-alarm point
    ]
    document = {"rule_files": [], "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": cases}]}
    (tmp_path / "panel_test.yml").write_text(yaml.safe_dump(document, sort_keys=False, width=10_000))
    result = promtool("test", "rules", "panel_test.yml", cwd=tmp_path)
    assert result.returncode == 0, f"promtool test rules:\n{result.stdout}\n{result.stderr}"


def _substituted(title: str) -> str:
    expr = _expr(title)
    for variable, value in (("$evaluator", ".*"), ("$__rate_interval", "5m"), ("$__range", "30m")):
        expr = expr.replace(variable, value)
    return expr


@pytest.mark.integration
def test_the_shares_and_the_counts_evaluated_by_promtool(tmp_path: Path) -> None:
    false_alarms = [
        {"labels": '{evaluator="faithful"}', "value": 0.25},
        {"labels": '{evaluator="tool_errors"}', "value": 0},
    ]
    misses = [{"labels": '{evaluator="faithful"}', "value": 0.5}, {"labels": '{evaluator="polite"}', "value": 0}]
    counts = [
        {"labels": f'{{agreement="{a}",evaluator="{e}",verdict="{v}"}}', "value": n}
        for e, v, a, n in (
            ("faithful", "fail", "agree", 90),
            ("faithful", "fail", "disagree", 30),
            ("faithful", "pass", "agree", 30),
            ("faithful", "pass", "disagree", 30),
            ("faithful", "skip", "disagree", 150),
            ("tool_errors", "fail", "agree", 60),
            ("polite", "pass", "agree", 60),
        )
    ]
    per_hour = [{"labels": '{agreement="agree"}', "value": 480}, {"labels": '{agreement="disagree"}', "value": 420}]
    cases = [
        {
            "expr": _substituted("False-alarm share of reviewed failures"),
            "eval_time": "30m",
            "exp_samples": false_alarms,
        },
        {"expr": _substituted("Miss share of reviewed passes"), "eval_time": "30m", "exp_samples": misses},
        {"expr": _substituted("Reviews in the time range by agreement"), "eval_time": "30m", "exp_samples": counts},
        # Rounded to a power of two: Prometheus sums the series in no fixed order, and 1/60-per-second rates summed
        # in another order differ in the last bit (480 or 480.00000000000006); the panel's query is what is tested.
        {
            "expr": f"round({_substituted('Reviews per hour by agreement')}, {EXACT})",
            "eval_time": "30m",
            "exp_samples": per_hour,
        },
    ]
    _promtool(tmp_path, cases)
