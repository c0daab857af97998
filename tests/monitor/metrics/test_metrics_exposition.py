"""Exposition: content negotiation and trace_id exemplars on failing results (OpenMetrics only)."""

from __future__ import annotations

import threading

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_classic

from monitor.metrics import MetricsExporter, wants_openmetrics
from tests.support.metrics_scrape import observe_result, observe_trace

FAIL_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PASS_ID = "0af7651916cd43dd8448eb211c80319c"
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)


def observe(m: MetricsExporter, *, score: float, passed: bool, trace_id: str) -> None:
    observe_result(
        m, evaluator="relevance", level="trace", service="svc", agent="planner", score=score, passed=passed,
        skipped=False, skip_reason=None, trace_id=trace_id, duration_seconds=0.01,
    )  # fmt: skip


@pytest.fixture
def exporter() -> MetricsExporter:
    m = MetricsExporter()
    observe(m, score=0.9, passed=True, trace_id=PASS_ID)
    observe(m, score=0.2, passed=False, trace_id=FAIL_ID)
    return m


def test_failing_result_carries_a_trace_id_exemplar_in_openmetrics(exporter: MetricsExporter) -> None:
    body, content_type = exporter.render(PROMETHEUS_ACCEPT)
    assert content_type == OPENMETRICS
    families = {f.name: f for f in parse_openmetrics(body.decode())}
    results = {s.labels["outcome"]: s for s in families["agent_eval_results"].samples if s.name.endswith("_total")}
    assert results["fail"].exemplar is not None
    assert results["fail"].exemplar.labels == {"trace_id": FAIL_ID}
    assert results["pass"].exemplar is None
    buckets = [s for s in families["agent_eval_score"].samples if s.name == "agent_eval_score_bucket"]
    with_exemplar = [s for s in buckets if s.exemplar is not None]
    assert [(s.labels["le"], s.exemplar.labels, s.exemplar.value) for s in with_exemplar] == [
        ("0.2", {"trace_id": FAIL_ID}, 0.2)
    ]


def test_classic_exposition_has_no_exemplars(exporter: MetricsExporter) -> None:
    body, content_type = exporter.render("text/plain")
    assert content_type.startswith("text/plain")
    text = body.decode()
    assert "trace_id" not in text and FAIL_ID not in text
    names = {f.name for f in parse_classic(text)}
    assert {"agent_eval_results", "agent_eval_score"} <= names


def test_invalid_trace_id_gives_no_exemplar() -> None:
    m = MetricsExporter()
    observe(m, score=0.2, passed=False, trace_id="not-a-trace-id")
    body, _ = m.render("application/openmetrics-text")
    assert b"trace_id" not in body
    observe(m, score=0.2, passed=False, trace_id=FAIL_ID.upper())
    body, _ = m.render("application/openmetrics-text")
    assert f'trace_id="{FAIL_ID}"'.encode() in body


@pytest.mark.parametrize(
    ("accept", "openmetrics"),
    [
        (None, False),
        ("", False),
        ("*/*", False),
        ("text/plain;version=0.0.4", False),
        ("application/openmetrics-text", True),
        (PROMETHEUS_ACCEPT, True),
        ("Application/OpenMetrics-Text; version=1.0.0", True),
        ("text/plain;q=1.0, application/openmetrics-text;q=0.5", False),
        ("application/openmetrics-text;q=0", False),
        ("application/json, application/openmetrics-text;q=bogus", True),
    ],
)
def test_content_negotiation(accept: str | None, openmetrics: bool) -> None:
    assert wants_openmetrics(accept) is openmetrics
    body, content_type = MetricsExporter().render(accept)
    if openmetrics:
        assert content_type == OPENMETRICS
        assert body.endswith(b"# EOF\n")
    else:
        assert content_type == "text/plain; version=1.0.0; charset=utf-8"
        assert b"# EOF" not in body


def test_observing_while_rendering_from_another_thread() -> None:
    m = MetricsExporter(window_sample_cap=50, label_value_cap=5)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(2000):
                observe(m, score=(i % 10) / 10, passed=i % 3 != 0, trace_id=FAIL_ID)
                observe_trace(m, f"svc{i % 8}", 0.5, False, [("model", 1, 1)], [("tool", True)], FAIL_ID)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():
        list(parse_classic(m.render(None)[0].decode()))
    thread.join()
    assert errors == []
    ratio = [
        s for f in parse_classic(m.render(None)[0].decode()) for s in f.samples if s.name == "agent_eval_pass_ratio"
    ]
    assert ratio and all(0.0 <= s.value <= 1.0 for s in ratio)
