"""Labels an SRE slices by: agent and level on results, service on skips, LLM calls by outcome, no *_created."""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_classic

from evaluators import load_traces
from evaluators.sdk import builtin
from monitor.engine.assembler import CompletedTrace
from monitor.engine.batch_run import trace_tally
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.recorder import ResultRecorder
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import ResultRow
from tests.conftest import CORPUS
from tests.support.builtins_spans import agent, chat
from tests.support.metrics_scrape import TRACE_ID, classic, observe_trace, result, result_labels, samples, scored, value


def test_results_carry_level_and_the_agent_only_at_agent_level() -> None:
    m = MetricsExporter()
    result(m, level="trace", agent="planner")  # a trace-level result never names an agent
    result(m, level="llm", agent="planner")  # nor does an llm-level one
    result(m, level="agent", agent="planner", score=0.1, passed=False)
    result(m, level="agent", agent=None)  # an unnamed agent: empty, not "unknown"
    result(m, level="agent", agent="  \x00 ")
    assert value(m, "agent_eval_results_total", **result_labels("pass")) == 1
    assert value(m, "agent_eval_results_total", **result_labels("pass", level="llm")) == 1
    assert value(m, "agent_eval_results_total", **result_labels("fail", level="agent", agent="planner")) == 1
    assert value(m, "agent_eval_results_total", **result_labels("pass", level="agent")) == 2
    assert {s.labels["agent"] for s in samples(m, "agent_eval_results_total")} == {"", "planner"}
    assert {s.labels["agent"] for s in samples(m, "agent_eval_score_count")} == {"", "planner"}
    score = dict(evaluator="relevance", level="agent", service="svc", agent="planner")
    assert value(m, "agent_eval_score_count", **score) == 1


def test_skips_carry_service_level_and_agent() -> None:
    m = MetricsExporter()
    result(m, service="a", skipped=True, score=None, passed=None, skip_reason="no_data")
    result(m, service="b", level="agent", agent="planner", skipped=True, score=None, passed=None, skip_reason="x")
    assert value(m, "agent_eval_skips_total", evaluator="relevance", service="a", reason="no_data") == 1
    assert value(m, "agent_eval_skips_total", evaluator="relevance", service="b", reason="x") == 1
    assert value(m, "agent_eval_results_total", **result_labels("skip", service="a")) == 1
    assert value(m, "agent_eval_results_total", **result_labels("skip", "relevance", "b", "agent", "planner")) == 1


def test_agent_label_is_capped_like_the_other_trace_labels() -> None:
    m = MetricsExporter(label_value_cap=2)
    for name in ("a1", "a2", "a3", "a4"):
        result(m, level="agent", agent=name)
    result(m, level="trace")  # the empty trace-level value takes no slot and never overflows
    agents = {s.labels["agent"]: s.value for s in samples(m, "agent_eval_results_total")}
    assert agents == {"a1": 1, "a2": 1, "__other__": 2, "": 1}
    assert value(m, "agent_monitor_label_overflow_total", label="agent") == 2


def test_per_agent_pass_ratio_is_a_sum_by_agent() -> None:
    """sum by (agent)(pass) / sum by (agent)(pass|fail), computed over the exposed counters."""
    m = MetricsExporter()
    scored(m, [0.9, 0.9, 0.1], level="agent", agent="planner")
    scored(m, [0.1, 0.9], level="agent", agent="writer", evaluator="other")
    scored(m, [0.1], level="trace")
    result(m, level="agent", agent="writer", skipped=True, score=None, passed=None, skip_reason="no_data")
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in samples(m, "agent_eval_results_total"):
        totals[s.labels["agent"]][s.labels["outcome"]] += s.value
    ratio = {a: t["pass"] / (t["pass"] + t["fail"]) for a, t in totals.items()}
    assert ratio == pytest.approx({"planner": 2 / 3, "writer": 0.5, "": 0.0})


def test_llm_calls_count_provider_errors_apart() -> None:
    m = MetricsExporter(label_value_cap=2)
    calls = [("gpt-4o", True), ("gpt-4o", False), (None, False), ("m2", True), ("m3", True)]
    observe_trace(m, "svc", 1.0, True, [], [("search", True)], TRACE_ID, calls)
    assert value(m, "agent_llm_calls_total", service="svc", model="gpt-4o", outcome="ok") == 1
    assert value(m, "agent_llm_calls_total", service="svc", model="gpt-4o", outcome="error") == 1
    assert value(m, "agent_llm_calls_total", service="svc", model="unknown", outcome="error") == 1
    assert value(m, "agent_llm_calls_total", service="svc", model="__other__", outcome="ok") == 2
    assert value(m, "agent_tool_calls_total", service="svc", tool="search", status="ok") == 1


@pytest.mark.parametrize("accept", [None, "application/openmetrics-text"])
def test_no_created_series_in_either_format(accept: str | None) -> None:
    m = MetricsExporter()
    scored(m, [0.2, 0.9], level="agent", agent="planner")
    observe_trace(m, "svc", 1.0, False, [("gpt-4o", 3, 4)], [("t", True)], TRACE_ID, [("gpt-4o", True)])
    m.evaluation.dropped("shutdown_timeout", 1)
    body = m.render(accept)[0].decode()
    parse = parse_openmetrics if accept else parse_classic
    names = {s.name for f in parse(body) for s in f.samples}
    assert "agent_eval_results_total" in names and "agent_eval_score_bucket" in names
    assert not [n for n in names if n.endswith("_created")]
    assert "_created" not in body


def _worker(*names: str) -> tuple[TraceEvaluator, ResultRecorder, MetricsExporter]:
    m = MetricsExporter()
    return (
        TraceEvaluator([ConfiguredEvaluator(builtin(n), n) for n in names]),
        ResultRecorder(m.recording, m.results.apply_tally, m.evaluation.dropped),
        m,
    )


def test_worker_feeds_agent_names_and_levels_from_a_recorded_handoff() -> None:
    worker, recorder, m = _worker("error_free", "agent_efficiency", "finish_reason")
    recorder.record(trace_tally([worker.outcome(trace) for trace in load_traces(CORPUS / "adk_native__handoff")]))
    levels = {
        (s.labels["evaluator"], s.labels["level"], s.labels["agent"]) for s in samples(m, "agent_eval_results_total")
    }
    assert levels == {
        ("error_free", "trace", ""),
        ("agent_efficiency", "agent", "flight_agent"),
        ("agent_efficiency", "agent", "triage_agent"),
        ("finish_reason", "llm", ""),
    }
    assert sum(s.value for s in samples(m, "agent_llm_calls_total") if s.labels["outcome"] == "ok") == 3


def test_worker_counts_a_failed_llm_call_as_a_provider_error() -> None:
    root = agent("planner")
    ok = chat("It is sunny.", parent=root, model="gpt-4o")
    failed = dataclasses.replace(chat(None, parent=root, model="gpt-4o"), status_code=2, status_message="HTTP 500")
    completed = CompletedTrace(ok.trace_id, [root, failed, ok], "quiet", time.monotonic(), time.monotonic())
    worker, recorder, m = _worker("error_free")
    recorder.record(trace_tally(worker.evaluate_batch([completed])))
    assert value(m, "agent_llm_calls_total", service="unknown", model="gpt-4o", outcome="error") == 1
    assert value(m, "agent_llm_calls_total", service="unknown", model="gpt-4o", outcome="ok") == 1
    assert "agent_llm_calls_total" in classic(m)


def test_external_results_carry_source_external_even_after_a_replay_resolved_their_name() -> None:
    m = MetricsExporter()
    m.results.replay(time.time(), [(("thumbs", "trace", "svc", None, ""), None, False)])  # resolved before known
    external = ResultRow(None, None, None, "thumbs", "trace", None, False, None, None, None, 0.0, external=True)
    tally = MetricsTally.from_wire(_with_external(external).wire())  # across the process boundary
    m.results.apply_tally(tally)
    result(m, evaluator="relevance")
    assert value(m, "agent_eval_results_total", **result_labels("fail", "thumbs", source="external")) == 1
    assert value(m, "agent_eval_results_total", **result_labels("fail", "thumbs")) is None  # never as the daemon's
    assert value(m, "agent_eval_results_total", **result_labels("pass", source="daemon")) == 1


def _with_external(row: ResultRow) -> MetricsTally:
    tally = MetricsTally()
    tally.add_results("svc", TRACE_ID, [row])
    return tally
