"""The Grafana dashboard (deploy/grafana/dashboards/agent-quality.json) and its provisioning files.

Structural tests read the files only. The live test runs every query of the dashboard against a real Prometheus
that scrapes the real daemon after it evaluated corpus traces: no query errors, every metric and label the
dashboard names exists, and the key panels and the exemplars return data.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import yaml

from evaluators.pricing import TOKEN_KINDS
from evaluators.traces import read_paths
from tests.deploy.evals_fixture import CRASH_SERVICE
from tests.deploy.resend_corpus import new_trace_id
from tests.integration.conftest import CORPUS, project_env
from tests.integration.daemon_process import DaemonProcess
from tests.integration.drift_daemon import default_config_change
from tests.integration.promstack import ServerSet, query, scrape_config
from tests.integration.spend_mix import COPIES, MIX, OVERRIDES, UNKNOWN, send_process
from tests.support.drift_rows import create_store, write_traces
from tests.support.fake_gemini import FakeGemini

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "agent-quality.json"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "datasources.yaml"
PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "dashboards.yaml"
METRICS_DOC = ROOT / "docs" / "metrics.md"
GRAFANA_DOC = ROOT / "docs" / "grafana.md"

SCHEMA_VERSION = 42  # the last schemaVersion of Grafana's classic (v1) dashboard JSON model
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

# Series the dashboard reads that the daemon does not export: the recording rules and alerts of the generated
# Prometheus rules (`agent-monitor rules`), and Prometheus's own ALERTS. Spelled exactly as the generator names
# them; the live test lets only these be absent from Prometheus.
RECORDING_RULES = (
    "agent_eval:error_ratio:rate5m",
    "agent_eval:error_ratio:rate30m",
    "agent_eval:error_ratio:rate1h",
    "agent_eval:error_ratio:rate2h",
    "agent_eval:error_ratio:rate6h",
    "agent_eval:error_ratio:rate1d",
    "agent_eval:error_ratio:rate3d",
    "agent_eval:error_ratio:rate30d",
    "agent_eval:slo_objective",
    "agent_eval:slo_error_budget_remaining",
)
RULE_SERIES = frozenset({*RECORDING_RULES, "ALERTS"})
# Series that appear with the first review written (a reviewer's act): the live test writes none, so these may be
# absent from Prometheus there (tests/deploy/test_dashboard_reviews.py runs their queries with promtool).
UNTIL_REVIEWED = frozenset({"agent_eval_reviews_total"})
# Series that exist only while an evaluator's pass-ratio threshold is breached (the live test breaches none; the
# explanation's end-to-end test, tests/integration/test_explain_e2e.py, reads it from a real Prometheus).
WHILE_BREACHED = frozenset({"agent_eval_attribution"})
# Series of the drift report's signals: they appear once a report has a signal with data in its windows. The live
# test's short run has none of its own: its store is given a change (drift_daemon.default_config_change), so all of
# them are there (tests/deploy/test_dashboard_drift.py runs their queries with promtool too).
UNTIL_DRIFTED = frozenset(
    {
        "agent_quality_baseline",
        "agent_quality_recent",
        "agent_quality_drift",
        "agent_quality_drift_active",
        "agent_quality_drift_since_timestamp_seconds",
    }
)
ALERT_NAMES = frozenset(
    {
        "AgentEvalPassRatioLow",
        "AgentEvalNewFailureSignature",
        "AgentEvalVariantWorse",
        "AgentEvalErrorBudgetBurn",
        "AgentQualityRegression",
        "AgentBehaviourDrift",
        "AgentMonitorReceiversRefusing",
        "AgentMonitorTracesDropped",
        "AgentMonitorEvaluationBacklog",
        "AgentMonitorJudgeUnavailable",
        "AgentMonitorJudgeCapacity",
        "AgentMonitorReviewUnavailable",
        "AgentMonitorPollFailing",
        "AgentMonitorDown",
    }
)

# Panels that must show data once the daemon has evaluated traces (the live test): a value above 0 ("positive":
# rate() saw the counters grow), or at least a number ("finite": not only NaN, e.g. an idle queue reads 0).
KEY_PANELS = {
    "Judge spend": "positive",
    "Pass ratio per evaluator": "positive",
    "Result rate by outcome": "positive",
    "Failing results by evaluator": "positive",
    "Score percentiles (p5, p50, p95)": "positive",
    "In-window pass ratio": "positive",
    "Trace duration p50, p95, p99": "positive",
    "Tokens by model and direction": "positive",
    "Tool error ratio": "positive",
    "LLM call error ratio": "finite",
    "Spans in by receiver": "positive",
    "Evaluation queue depth": "finite",
    "Traces dropped by reason": "positive",
    "Spend by agent and model": "positive",
    "Cost per trace p50, p95": "positive",
    "Cost per passing trace": "positive",
    "Unpriced LLM calls": "positive",
    "Tokens by kind": "positive",
    "Spend in the time range": "positive",
    "Session pass ratio per evaluator": "positive",
    "Failing sessions by evaluator": "positive",
    "Sessions completed by how they ended": "positive",
    "Open sessions": "finite",
    "Turns per session p50, p95": "positive",
    "Late and cut turns": "finite",
    "Active changes": "positive",  # the error rate change the store was given
    "Drift effect per signal": "positive",
}
EXEMPLAR_PANELS = {  # panel -> the series its exemplars come from
    "Failing results by evaluator": "agent_eval_results_total",
    "Score percentiles (p5, p50, p95)": "agent_eval_score_bucket",
}

# Grafana's global variables a query may use, and the data-link variables a link may use.
QUERY_BUILTINS = frozenset({"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms"})
LINK_BUILTINS = frozenset({"__field", "__series", "__value", "__data", "__url_time_range", "__from", "__to"})
# What the live test puts in for the variables (as Grafana would for "All" and a short time range).
SUBSTITUTIONS = {
    "service": ".*",
    "evaluator": ".*",
    "agent": ".*",
    "window": "5m",
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "5m",
}
FILTERED_LABELS = ("service", "evaluator", "agent")  # every selector of a metric with such a label filters on it

_VARIABLE = re.compile(r"\$\{([A-Za-z0-9_]+)((?:\.[^}:]*)?)(?::[A-Za-z]+)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


# --- the files --------------------------------------------------------------------------------------------------
def load_dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def all_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, rows included, with the panels of collapsed rows."""
    found = []
    for panel in dashboard["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def query_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in all_panels(dashboard) if p["type"] != "row"]


def row_panels(title: str) -> list[str]:
    """The titles of the panels under the dashboard's row `title` (up to the next row), in order."""
    titles, inside = [], False
    for p in all_panels(load_dashboard()):
        if p["type"] == "row":
            inside = p["title"] == title
        elif inside:
            titles.append(p["title"])
    return titles


def panel(dashboard: dict[str, Any], title: str) -> dict[str, Any]:
    matches = [p for p in all_panels(dashboard) if p.get("title") == title]
    assert len(matches) == 1, f"{len(matches)} panels titled {title!r}"
    return matches[0]


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every Prometheus annotation."""
    for p in query_panels(dashboard):
        for t in p["targets"]:
            yield f"{p['title']} [{t['refId']}]", t["expr"]
    for annotation in dashboard["annotations"]["list"]:
        if "expr" in annotation:
            yield f"annotation {annotation['name']}", annotation["expr"]


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def referenced_variables(text: str) -> set[str]:
    """The variable names in `text`: `$name`, `${name}`, `${name:format}`, `${__field.labels.x}` (-> __field)."""
    return {m.group(1) or m.group(3) for m in _VARIABLE.finditer(text)}


def links(dashboard: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, link) for the dashboard links, the panel links and the data links of the field configs (their
    defaults and their overrides)."""
    for link in dashboard.get("links", []):
        yield "dashboard", link
    for p in query_panels(dashboard):
        for link in p.get("links", []):
            yield f"{p['title']} (panel link)", link
        for link in p["fieldConfig"]["defaults"].get("links", []):
            yield f"{p['title']} (data link)", link
        for override in p["fieldConfig"]["overrides"]:
            for prop in override["properties"]:
                for link in prop["value"] if prop["id"] == "links" else []:
                    yield f"{p['title']} (data link of {override['matcher']['options']})", link


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


# --- PromQL, as far as the dashboard uses it ---------------------------------------------------------------------
_TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"|\{[^}]*\}|\[[^\]]*\]|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d+)?|.')
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_KEYWORDS = _LABEL_LISTS | {"bool", "and", "or", "unless", "offset", "inf", "nan"}


@dataclass(frozen=True)
class Selector:
    metric: str
    matchers: tuple[tuple[str, str, str], ...]  # (label, operator, value)


@dataclass(frozen=True)
class Grouping:
    labels: tuple[str, ...]
    metrics: tuple[str, ...]  # the metrics of the aggregated expression


def analyze(expr: str) -> tuple[list[Selector], list[Grouping]]:
    """The vector selectors of `expr`, and its `op by (labels) (expression)` aggregations with their metrics.

    Enough for the dashboard's own queries (prefix `by`, no `{__name__=...}` selectors), not a PromQL parser."""
    tokens = [t for t in _TOKEN.findall(expr) if not t.isspace()]
    in_label_list: set[int] = set()
    for i, token in enumerate(tokens):
        if token in _LABEL_LISTS and i + 1 < len(tokens) and tokens[i + 1] == "(":
            in_label_list.update(range(i + 1, tokens.index(")", i + 1) + 1))
    selectors: list[tuple[int, Selector]] = []
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        function = following == "(" or following in ("by", "without")  # a call, or an aggregation with a clause
        if i in in_label_list or token in _KEYWORDS or function or not _IDENTIFIER.fullmatch(token):
            continue
        matchers = tuple(_MATCHER.findall(following)) if following.startswith("{") else ()
        selectors.append((i, Selector(token, matchers)))
    groupings = []
    for i, token in enumerate(tokens):
        if token not in ("by", "without") or tokens[i + 1] != "(":
            continue
        close = tokens.index(")", i + 1)
        labels = tuple(t for t in tokens[i + 2 : close] if t != ",")
        assert tokens[close + 1] == "(", f"aggregate with a prefix `by (...)` clause: {expr}"
        depth, end = 0, close + 1
        for end in range(close + 1, len(tokens)):
            depth += {"(": 1, ")": -1}.get(tokens[end], 0)
            if depth == 0:
                break
        groupings.append(Grouping(labels, tuple(s.metric for j, s in selectors if close + 1 < j < end)))
    return [s for _, s in selectors], groupings


def substitute(expr: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        assert name in SUBSTITUTIONS, f"no test value for ${name}"
        return SUBSTITUTIONS[name]

    return _VARIABLE.sub(value, expr)


# --- the metric contract (docs/metrics.md) ------------------------------------------------------------------------
def contract() -> dict[str, frozenset[str]]:
    """Series name -> label names, from the tables of docs/metrics.md (histograms as _bucket, _count, _sum)."""
    series: dict[str, frozenset[str]] = {}
    for line in METRICS_DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) < 3:
            continue
        name = cells[0].strip("`")
        typed = cells[1] in ("counter", "gauge", "histogram")
        label_cell = cells[2] if typed else cells[1]
        labels = frozenset(lab.strip().strip("`") for lab in label_cell.split(",") if lab.strip())
        histogram = cells[1] == "histogram" if typed else cells[2].startswith("histogram")
        if histogram:
            series[f"{name}_bucket"] = labels | {"le"}
            series[f"{name}_count"] = labels
            series[f"{name}_sum"] = labels
        else:
            series[name] = labels
    return series


# --- structural tests --------------------------------------------------------------------------------------------
def test_the_dashboard_is_a_current_grafana_dashboard():
    dashboard = load_dashboard()
    assert dashboard["uid"] == "agent-quality"
    assert dashboard["title"] == "Agent quality"
    assert dashboard["schemaVersion"] == SCHEMA_VERSION
    assert "agent-monitor" in dashboard["tags"]
    assert dashboard["id"] is None  # importable into any Grafana: the instance assigns the numeric id
    assert {r["title"] for r in all_panels(dashboard) if r["type"] == "row"} == {
        "Quality",
        "Scores",
        "Alerts and SLOs",
        "Agents",
        "LLM judges",
        "Daemon health",
        "Canary",
        "Spend",
        "Conversations",
        "Agreement with reviewers",
        "Drift",
        "What's different about the failures",
    }


def test_panel_ids_are_unique_and_the_grid_has_no_overlap():
    dashboard = load_dashboard()
    panels = all_panels(dashboard)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) and i > 0 for i in ids)
    boxes = []
    for p in panels:
        grid = p["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] >= 0 and grid["y"] >= 0, p["title"]
        assert grid["x"] + grid["w"] <= 24, f"{p['title']} is wider than the 24-column grid"
        boxes.append((p["title"], grid["x"], grid["y"], grid["x"] + grid["w"], grid["y"] + grid["h"]))
    for (a, ax0, ay0, ax1, ay1), (b, bx0, by0, bx1, by1) in combinations(boxes, 2):
        assert ax1 <= bx0 or bx1 <= ax0 or ay1 <= by0 or by1 <= ay0, f"{a!r} overlaps {b!r}"


def test_every_panel_and_query_uses_the_datasource_variable():
    dashboard = load_dashboard()
    for p in query_panels(dashboard):
        assert p["datasource"] == DATASOURCE, p["title"]
        assert p["targets"], f"{p['title']} has no query"
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["datasource"] == DATASOURCE and t["expr"].strip(), f"{p['title']} [{t['refId']}]"
    for v in variables(dashboard).values():
        if v["type"] == "query":
            assert v["datasource"] == DATASOURCE, v["name"]
    prometheus_annotations = [a for a in dashboard["annotations"]["list"] if "expr" in a]
    assert prometheus_annotations and all(a["datasource"] == DATASOURCE for a in prometheus_annotations)


def test_the_variables():
    dashboard = load_dashboard()
    found = variables(dashboard)
    assert set(found) == {"datasource", "service", "evaluator", "agent", "window", "review_url"}
    source = found["datasource"]
    assert source["type"] == "datasource" and source["query"] == "prometheus"
    assert source["current"]["value"] == prometheus_source()["uid"]
    for name in ("service", "evaluator", "agent"):
        v = found[name]
        assert v["type"] == "query" and v["multi"] and v["includeAll"] and v["allValue"] == ".*", name
        assert v["definition"] == f"label_values(agent_eval_results_total, {name})"
        assert v["query"]["query"] == v["definition"] and v["query"]["label"] == name
    window = found["window"]
    assert window["definition"] == "label_values(agent_eval_pass_ratio, window)" and not window["multi"]
    review = found["review_url"]
    assert review["type"] == "textbox" and review["query"] == "http://localhost:9464"
    assert review["current"]["value"] == "http://localhost:9464"


def test_every_variable_used_is_defined_and_every_variable_is_used():
    dashboard = load_dashboard()
    defined = set(variables(dashboard))
    used: set[str] = set()
    for where, expr in queries(dashboard):
        names = referenced_variables(expr)
        assert names <= defined | QUERY_BUILTINS, f"{where}: undefined {names - defined - QUERY_BUILTINS}"
        used |= names
    for where, link in links(dashboard):
        names = referenced_variables(link["url"] + link["title"])
        assert names <= defined | LINK_BUILTINS, f"{where}: undefined {names - defined - LINK_BUILTINS}"
        used |= names
    for v in variables(dashboard).values():
        used |= referenced_variables(json.dumps(v.get("datasource", "")))
    for p in query_panels(dashboard):
        used |= referenced_variables(p["datasource"]["uid"])
    assert defined <= used, f"unused variables: {defined - used}"


def test_every_series_and_label_is_in_the_metric_contract():
    series = contract()
    assert "agent_eval_results_total" in series and "agent_eval_score_bucket" in series  # the doc parses
    dashboard = load_dashboard()
    for where, expr in queries(dashboard):
        selectors, groupings = analyze(expr)
        assert selectors, f"{where}: no series found in {expr}"
        for s in selectors:
            if s.metric in RULE_SERIES:
                continue
            assert s.metric in series, f"{where}: {s.metric} is not in docs/metrics.md"
            for label, _, _ in s.matchers:
                assert label in series[s.metric], f"{where}: {s.metric} has no label {label}"
            for label in FILTERED_LABELS:
                if label in series[s.metric]:
                    assert (label, "=~", f"${label}") in s.matchers, f"{where}: {s.metric} not filtered by ${label}"
        for grouping in groupings:
            raw = [m for m in grouping.metrics if m not in RULE_SERIES]
            for label in grouping.labels:
                if label == "instance":
                    continue  # the scrape target: every series has it
                for metric in raw:
                    assert label in series[metric], f"{where}: by ({label}) but {metric} has no such label"


def test_the_rule_series_are_spelled_as_the_rule_generator_names_them():
    dashboard = load_dashboard()
    named = {s.metric for _, expr in queries(dashboard) for s in analyze(expr)[0]}
    assert {m for m in named if ":" in m} <= RULE_SERIES
    assert {"ALERTS", "agent_eval:slo_error_budget_remaining"} <= named
    for where, expr in queries(dashboard):
        for s in analyze(expr)[0]:
            if s.metric == "ALERTS":
                matchers = {label: (op, value) for label, op, value in s.matchers}
                assert matchers["alertstate"] == ("=", "firing"), where
                op, pattern = matchers["alertname"]
                assert op == "=~" and set(pattern.split("|")) == ALERT_NAMES, where


def test_the_rule_series_exist_in_the_generated_rules():
    """deploy/monitor.yaml has alerts, SLOs (period 30d) and health alerts: its generated rules (kept fresh by
    tests/monitor/alerting) record every series and name every alert the dashboard reads."""
    groups = yaml.safe_load((ROOT / "deploy" / "prometheus" / "rules" / "agent-monitor.rules.yml").read_text())
    rules = [rule for group in groups["groups"] for rule in group["rules"]]
    assert set(RECORDING_RULES) <= {rule["record"] for rule in rules if "record" in rule}
    # deploy/monitor.yaml compares no versions: AgentEvalVariantWorse comes with variants.compare entries only.
    assert {rule["alert"] for rule in rules if "alert" in rule} == ALERT_NAMES - {"AgentEvalVariantWorse"}


def test_pass_ratio_panel_shows_the_threshold_dashed_and_links_to_failing_traces():
    p = panel(load_dashboard(), "Pass ratio per evaluator")
    threshold = [t for t in p["targets"] if "agent_eval_threshold_ratio" in t["expr"]]
    assert len(threshold) == 1
    dashed = [
        o
        for o in p["fieldConfig"]["overrides"]
        if o["matcher"] == {"id": "byFrameRefID", "options": threshold[0]["refId"]}
        and {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}} in o["properties"]
    ]
    assert dashed
    assert any(link["url"].startswith("${review_url}/review?outcome=fail&") for link in p["links"])
    assert any("evaluator=${__field.labels.evaluator}" in link["url"] for link in p["fieldConfig"]["defaults"]["links"])


def test_the_failing_traces_links_open_the_review_page_not_the_deprecated_api():
    """/api/failing is a redirect to the JSON API (issue 24): a human clicking from Grafana wants the page."""
    dashboard = load_dashboard()
    assert [link["url"] for link in dashboard["links"] if link["title"] == "Failing traces"] == [
        "${review_url}/review?outcome=fail"
    ]
    for where, link in links(dashboard):
        assert "/api/failing" not in link["url"], where


def test_exemplars_are_on_for_the_failing_result_and_score_panels():
    dashboard = load_dashboard()
    for title, series in EXEMPLAR_PANELS.items():
        with_exemplars = [t for t in panel(dashboard, title)["targets"] if t.get("exemplar")]
        assert len(with_exemplars) == 1 and series in with_exemplars[0]["expr"], title


def test_window_panels_say_they_are_per_replica():
    dashboard = load_dashboard()
    for p in query_panels(dashboard):
        if any("window=~" in t["expr"] for t in p["targets"]):
            assert "Per replica" in p["description"], p["title"]


# --- provisioning --------------------------------------------------------------------------------------------------
def provisioned_sources() -> dict[str, dict[str, Any]]:
    config = load_yaml(DATASOURCES)
    assert config["apiVersion"] == 1
    return {source["type"]: source for source in config["datasources"]}


def strings(node: Any) -> Iterator[str]:
    """Every string value in a parsed YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def prometheus_source() -> dict[str, Any]:
    return provisioned_sources()["prometheus"]


def test_the_datasources_are_provisioned_with_exemplar_links_to_the_traces():
    sources = provisioned_sources()
    prometheus, traces = sources["prometheus"], sources["jaeger"]
    assert prometheus["uid"] == "prometheus" and prometheus["url"] == "http://prometheus:9090"
    assert traces["uid"] == "traces" and traces["url"] == "http://jaeger:16686"
    destinations = prometheus["jsonData"]["exemplarTraceIdDestinations"]
    assert {d["name"] for d in destinations} == {"trace_id"}  # the daemon's exemplar label
    internal = [d for d in destinations if "datasourceUid" in d]
    assert [d["datasourceUid"] for d in internal] == [traces["uid"]]
    (review,) = [d for d in destinations if "url" in d]
    # Grafana expands ${ENV} in provisioning files: "$$" keeps the data-link variables for Grafana.
    assert review["url"] == "$${review_url}/review/traces/$${__value.raw}"
    for value in strings(load_yaml(DATASOURCES)):
        assert not re.search(r"(?<!\$)\$\{", value), f"{value}: Grafana would read an unescaped ${{...}} from its env"
    rate_floor = prometheus["jsonData"]["timeInterval"]
    assert re.fullmatch(r"\d+s", rate_floor)


def test_the_dashboard_provider_loads_the_dashboard_folder():
    config = load_yaml(PROVIDERS)
    assert config["apiVersion"] == 1
    (provider,) = config["providers"]
    assert provider["type"] == "file" and provider["folderUid"] == "agent-monitor"
    path = provider["options"]["path"]
    assert path == "/var/lib/grafana/dashboards"
    # docs/grafana.md tells to mount this repository folder there.
    assert f"deploy/grafana/dashboards:{path}" in GRAFANA_DOC.read_text()
    assert DASHBOARD.parent == GRAFANA / "dashboards" and sorted(DASHBOARD.parent.glob("*.json")) == [DASHBOARD]


def test_the_analyzer_sees_selectors_and_groupings():
    selectors, groupings = analyze(
        'histogram_quantile(0.5, sum by (le, evaluator) (rate(x_bucket{service=~"$service"}[$__rate_interval])))'
        " / on (evaluator) group_left sum by (evaluator) (y)"
    )
    assert selectors == [Selector("x_bucket", (("service", "=~", "$service"),)), Selector("y", ())]
    assert groupings == [Grouping(("le", "evaluator"), ("x_bucket",)), Grouping(("evaluator",), ("y",))]
    assert substitute('rate(x{a=~"$agent"}[$__rate_interval])') == 'rate(x{a=~".*"}[1m])'


# --- live: the real daemon, scraped by a real Prometheus --------------------------------------------------------
SCENARIOS = (  # several frameworks, tool errors, agents and handoffs
    "oi_openai__tool_agent",
    "oi_openai__tool_error",
    "tl_openai__tool_error",
    "otel_genai__tool_agent",
    "otel_genai__tool_error",
    "adk_native__tool_error",
    "oi_openai_agents__weather_handoff",
    "strands__tool_agent",
    "pydantic_ai__tool_agent",
    "vercel_ai__tool_agent",
)
SESSION_SCENARIOS = ("oi_openai__session_support", "otel_genai__session_interleaved")  # 3 conversations, 7 turns
SESSIONS_PER_ROUND = 3
NO_TOOL_ERRORS = {
    "module": "tests.integration.evals_fixture:no_tool_errors",
    "alert": {"min_pass_ratio": 0.9, "window": "5m", "for": "1s", "min_samples": 1},
}
JUDGE = {"module": "tests.integration.evals_fixture:answer_quality"}
CRASH_PROBE = {"module": "tests.deploy.evals_fixture:worker_crash_probe"}
NEVER_PASSES = {"module": "tests.deploy.evals_fixture:never_passes"}
FAST_RETRY = {"attempts": 2, "initial_delay": "10ms", "max_delay": "50ms", "jitter": "0s"}
RESEND = ROOT / "tests" / "deploy" / "resend_corpus.py"
VERDICTS = 'agent_eval_results_total{outcome=~"pass|fail"}'


def prometheus_get(port: int, path: str, **params: str | list[str]) -> Any:
    url = f"http://127.0.0.1:{port}{path}?" + urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    return body["data"]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def resend(grpc_port: int, round_tag: str, scenarios: tuple[str, ...], service: str | None = None) -> None:
    command = [sys.executable, str(RESEND), "--endpoint", f"127.0.0.1:{grpc_port}", "--round", round_tag]
    command += ["--service", service] if service else []
    result = subprocess.run(
        [*command, *(str(CORPUS / s) for s in scenarios)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **project_env()},
    )
    assert result.returncode == 0, f"sender failed:\n{result.stdout}\n{result.stderr}"


def values(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def shows(result: list[dict[str, Any]], expectation: str) -> bool:
    numbers = [float(r["value"][1]) for r in result]
    return any(math.isfinite(n) and (n > 0 or expectation == "finite") for n in numbers)


@pytest.mark.integration
def test_every_dashboard_query_runs_against_the_scraped_daemon(tmp_path):
    dashboard = load_dashboard()
    trace_ids = {s.trace_id for s in read_paths([CORPUS / s for s in SCENARIOS + SESSION_SCENARIOS]).spans}
    traces = len(trace_ids)
    with contextlib.ExitStack() as stack:
        fake = stack.enter_context(FakeGemini())
        workdir = tmp_path / "daemon"
        workdir.mkdir()
        config = {
            "evaluators": {"defaults": True, "add": [NO_TOOL_ERRORS, JUDGE, CRASH_PROBE, NEVER_PASSES]},
            "evaluation": {"workers": 2},
            "pricing": {"models": OVERRIDES},  # the spend mix's self-hosted model
            "alerting": {"default_alerts": {"enabled": False}},  # the threshold panel shows no_tool_errors' alone
            "sessions": {"idle": "1s"},  # the conversations of a round complete within the round
            "judges": {"gemini_api_key": "test-key", "base_url": fake.url, "retry": FAST_RETRY},
            "variants": {  # the canary row's series (they exist from start-up, data or not)
                "attribute": "service.version",
                "compare": [{"evaluator": "error_free", "baseline": "1.4", "candidate": "1.5"}],
                "pairwise": [{"baseline": "1.4", "candidate": "1.5"}],
            },
        }
        write_traces(create_store(workdir / "results.db"), default_config_change(time.time()))  # the drift series
        daemon = DaemonProcess(workdir, config, env=project_env())
        stack.callback(daemon.stop)
        daemon.start()
        servers = ServerSet(tmp_path)
        stack.callback(servers.stop)
        port = servers.start_prometheus(
            scrape_config(daemon.metrics_port), extra_args=("--enable-feature=exemplar-storage",)
        )

        def scraped(promql: str, expected: float) -> Callable[[], bool]:
            return lambda: any(float(r["value"][1]) >= expected for r in query(port, promql))

        # Two rounds of the same scenarios under new trace ids, and of the spend mix (prompt-cache and reasoning
        # tokens, an unpriced model): rate() sees every series grow after its first scrape. Each round waits for
        # the judge's results, which come after the rule-based ones.
        mix_traces = COPIES * len(MIX)
        for round_tag in ("1", "2"):
            expected = traces * int(round_tag)
            resend(daemon.grpc_port, round_tag, SCENARIOS + SESSION_SCENARIOS)  # session ids new each round
            send_process(daemon.grpc_port)
            judged = 'sum(agent_eval_results_total{evaluator="answer_quality"})'
            evaluated = (traces + mix_traces) * int(round_tag)
            wait_until(scraped("sum(agent_monitor_traces_evaluated_total)", evaluated), f"round {round_tag}")
            wait_until(scraped(judged, expected), f"round {round_tag} judged")
            completed = "sum(agent_sessions_completed_total)"
            wait_until(scraped(completed, SESSIONS_PER_ROUND * int(round_tag)), f"round {round_tag} conversations")
        # A worker process dies on the probe's trace (traces dropped, worker restarted); a malformed export is
        # refused (spans refused, a request not OK).
        resend(daemon.grpc_port, "crash", ("oi_openai__tool_agent",), service=CRASH_SERVICE)
        request = urllib.request.Request(
            f"http://127.0.0.1:{daemon.http_port}/v1/traces",
            data=b"\x0a\xff\xff",
            headers={"Content-Type": "application/x-protobuf"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
        wait_until(scraped('sum(agent_monitor_traces_dropped_total{reason="worker_crash"})', 1), "the crash")
        wait_until(scraped("sum(agent_monitor_spans_refused_total)", 1), "the refused export")
        wait_until(scraped("sum(agent_monitor_worker_restarts_total)", 1), "the worker restart")

        # Every panel is queried at the time of one scrape that succeeded: on a busy host a later scrape can time
        # out (1 s), and an instant query after it would find the daemon's series stale.
        wait_until(scraped('up{job="agent-monitor"}', 1), "a successful scrape")
        at = float(query(port, 'timestamp(up{job="agent-monitor"} == 1)')[0]["value"][1])  # that scrape's time
        names = set(prometheus_get(port, "/api/v1/label/__name__/values"))
        label_names: dict[str, set[str]] = {}

        def labels_of(metric: str) -> set[str]:
            if metric not in label_names:
                label_names[metric] = set(prometheus_get(port, "/api/v1/labels", **{"match[]": metric}))
            return label_names[metric]

        results: dict[str, list[dict[str, Any]]] = {}
        for where, expr in queries(dashboard):
            results[where] = query(port, substitute(expr), at)  # fails on a query error
            selectors, groupings = analyze(expr)
            for s in selectors:
                if s.metric in RULE_SERIES or (s.metric in UNTIL_REVIEWED | WHILE_BREACHED and s.metric not in names):
                    continue
                assert s.metric in names, f"{where}: Prometheus has no series {s.metric}"
                missing = {label for label, _, _ in s.matchers} - labels_of(s.metric)
                assert not missing, f"{where}: {s.metric} has no label {missing}"
            for grouping in groupings:
                for metric in (m for m in grouping.metrics if m not in RULE_SERIES and m in names):
                    missing = set(grouping.labels) - labels_of(metric)
                    assert not missing, f"{where}: {metric} has no label {missing} to group by"
        for name, v in variables(dashboard).items():
            if v["type"] == "query":
                metric = v["query"]["metric"]
                options = prometheus_get(port, f"/api/v1/label/{name}/values", **{"match[]": metric})
                assert options, f"variable {name}: no values of {name} on {metric}"

        for title, expectation in KEY_PANELS.items():
            answered = [r for where, r in results.items() if where.startswith(f"{title} [")]
            assert answered and any(shows(r, expectation) for r in answered), f"{title}: no data"
        # A ratio has a series for every evaluator, tool and model with traffic: 0 when nothing passed (or failed).
        growing = "sum by ({0}) (rate({1}[1m])) > 0"
        ratios = values(results["Pass ratio per evaluator [A]"], "evaluator")
        assert set(ratios) == set(values(query(port, growing.format("evaluator", VERDICTS), at), "evaluator"))
        assert ratios["never_passes"] == 0 and 0 < ratios["no_tool_errors"] < 1
        tools = values(results["Tool error ratio [A]"], "tool")
        assert set(tools) == set(values(query(port, growing.format("tool", "agent_tool_calls_total"), at), "tool"))
        assert min(tools.values()) == 0 and max(tools.values()) > 0
        models = values(results["LLM call error ratio [A]"], "model")
        assert set(models) == set(values(query(port, growing.format("model", "agent_llm_calls_total"), at), "model"))
        assert values(results["Pass ratio per evaluator [B]"], "evaluator") == {"no_tool_errors": 0.9}
        # The spend row: every priced (agent, model) of the mix, its unpriced model, every kind of token.
        spent = {(r["metric"].get("agent", ""), r["metric"]["model"]) for r in results["Spend in the time range [A]"]}
        mix = {(run.agent, call.model) for runs in MIX for run in runs for call in run.calls}
        assert mix - {(agent, model) for agent, model in mix if model == UNKNOWN.model} <= spent, spent
        assert UNKNOWN.model in values(results["Unpriced LLM calls [A]"], "model")
        assert set(values(results["Tokens by kind [A]"], "kind")) == set(TOKEN_KINDS)

        # The exemplars of the failing results: trace ids of the failing traces sent (new ids, see resend_corpus).
        failing = {
            new_trace_id(tag, tid)
            for tag in ("1", "2")
            for tid in {s.trace_id for s in read_paths([CORPUS / s for s in SCENARIOS if "error" in s]).spans}
        }
        now = time.time()
        for title, series in EXEMPLAR_PANELS.items():
            (target,) = [t for t in panel(dashboard, title)["targets"] if t.get("exemplar")]
            found = prometheus_get(
                port, "/api/v1/query_exemplars", query=substitute(target["expr"]), start=str(now - 600), end=str(now)
            )
            exemplars = [
                (group["seriesLabels"], e["labels"].get("trace_id")) for group in found for e in group["exemplars"]
            ]
            assert exemplars and all(labels["__name__"] == series for labels, _ in exemplars), title
            if "outcome" in target["expr"]:
                assert all(labels["outcome"] == "fail" for labels, _ in exemplars), title
            assert {tid for _, tid in exemplars} & failing, f"{title}: no exemplar of a failing trace: {exemplars}"
        # The p95 cost of a trace shows exemplars: the trace ids of traces with a priced call.
        [cost] = [t for t in panel(dashboard, "Cost per trace p50, p95")["targets"] if t.get("exemplar")]
        found = prometheus_get(
            port, "/api/v1/query_exemplars", query=substitute(cost["expr"]), start=str(now - 600), end=str(now)
        )
        exemplars = [
            (group["seriesLabels"], e["labels"].get("trace_id")) for group in found for e in group["exemplars"]
        ]
        assert exemplars and all(labels["__name__"] == "agent_trace_cost_usd_bucket" for labels, _ in exemplars)
        assert all(re.fullmatch(r"[0-9a-f]{32}", tid or "") for _, tid in exemplars), exemplars
