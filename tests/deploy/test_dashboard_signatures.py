"""The dashboard's failure signatures: the *New failure modes* panel (its queries, run by `promtool` over series of
new, stepping, old and restarted counters) and the links of its rows and of the *Firing alerts* table to the
signatures of an evaluator and service on the review's Failures page."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.test_dashboard import load_dashboard, panel
from tests.support.alert_rules import promtool, series

NEW = "agent_eval_failure_signatures_new_total"


SIGNATURES_LINK = (  # a table row's evaluator and service: its failure signatures over the dashboard's time range
    "${review_url}/review?evaluator=${__data.fields.evaluator}&service=${__data.fields.service}"
    "&since=${__from}&until=${__to}"
)


def test_new_failure_modes_panel_counts_new_and_active_signatures_and_links_to_them():
    p = panel(load_dashboard(), "New failure modes")
    assert p["type"] == "table" and p["gridPos"]["w"] == 24
    new, active = p["targets"]
    assert all(t["instant"] and t["format"] == "table" for t in (new, active))
    # new over the range: the growth of the counters, and the whole of a counter first seen within the range
    filters = 'service=~"$service", evaluator=~"$evaluator"'
    selector = f"agent_eval_failure_signatures_new_total{{{filters}}}"
    assert new["expr"].startswith("sum by (evaluator, service) (")
    assert f"{selector}\n    unless\n    last_over_time({selector}[$__range] offset ${{__range}})" in new["expr"]
    assert f"or\n  increase({selector}[$__range])" in new["expr"]
    assert active["expr"] == f"max by (evaluator, service) (agent_eval_failure_signatures_active{{{filters}}})"
    # rows by (evaluator, service): the two queries merged, each row a link to its signatures
    assert [t["id"] for t in p["transformations"]] == ["merge", "organize"]
    assert [link["url"] for link in p["fieldConfig"]["defaults"]["links"]] == [SIGNATURES_LINK]


def test_firing_alerts_link_each_evaluator_alert_to_its_signatures():
    p = panel(load_dashboard(), "Firing alerts")
    assert "sum by (alertname, severity, evaluator, service) (ALERTS{" in p["targets"][0]["expr"]
    [override] = [o for o in p["fieldConfig"]["overrides"] if o["matcher"] == {"id": "byName", "options": "evaluator"}]
    [links] = [prop["value"] for prop in override["properties"] if prop["id"] == "links"]
    assert [link["url"] for link in links] == [SIGNATURES_LINK]


@pytest.mark.integration
def test_the_new_failure_modes_query_counts_counters_new_in_the_range_whole(tmp_path: Path) -> None:
    """promtool evaluates the panel's query over a 10m range: a counter that steps counts its growth, one first
    seen within the range counts whole, one that does not grow or came back at 0 after a restart counts 0."""
    [new, _] = panel(load_dashboard(), "New failure modes")["targets"]
    expr = new["expr"].replace("${__range}", "10m").replace("$__range", "10m")
    expr = expr.replace('service=~"$service", evaluator=~"$evaluator"', 'service=~".*", evaluator=~".*"')
    inputs = [
        series(NEW, "0x20 1x40", evaluator="error_free", service="stepped", instance="a"),
        series(NEW, "_x20 2x40", evaluator="error_free", service="appeared", instance="a"),
        series(NEW, "3x60", evaluator="error_free", service="old", instance="a"),
        series(NEW, "5x20 _x2 0x37", evaluator="error_free", service="restarted", instance="a"),
    ]

    def sample(service: str, value: float) -> dict:
        return {"labels": f'{{evaluator="error_free", service="{service}"}}', "value": value}

    quiet = [sample("old", 0), sample("restarted", 0)]
    cases = [
        {"expr": expr, "eval_time": "25m", "exp_samples": [sample("stepped", 1), sample("appeared", 2), *quiet]},
        {"expr": expr, "eval_time": "45m", "exp_samples": [sample(s, 0) for s in ("stepped", "appeared")] + quiet},
    ]
    document = {"rule_files": [], "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": cases}]}
    (tmp_path / "panel_test.yml").write_text(yaml.safe_dump(document, sort_keys=False, width=10_000))
    result = promtool("test", "rules", "panel_test.yml", cwd=tmp_path)
    assert result.returncode == 0, f"promtool test rules:\n{result.stdout}\n{result.stderr}"
