"""Every rule builtin over the whole recorded corpus through `run_evaluators`: no errors, and known corpus facts."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest

from evaluators import EvaluationRecord, builtin, load_traces, run_evaluators
from tests.conftest import corpus_scenarios
from tests.support.builtins_spans import agent, chat, tool
from tests.support.spanfactory import make_span, trace_of

RULES = [
    "latency",
    "token_budget",
    "cost_budget",
    "error_free",
    "refusal",
    "llm_call_budget",
    "tool_success_rate",
    "loop_detection",
    "agent_efficiency",
    "hallucinated_tool",
    "tool_arguments_valid",
    "finish_reason",
    "response_length",
    "non_empty_response",
    "prohibited_content",
    "pii_leak",
]


@pytest.fixture(scope="module")
def corpus_records() -> dict[str, dict]:
    """scenario → {"expected": {trace_id: facts}, "records": {evaluator: [records]}}."""
    scenarios = corpus_scenarios()
    if len(scenarios) < 20:
        pytest.fail("the recorded corpus is missing (expected tests/fixtures/corpus)")
    evaluators = [builtin(name) for name in RULES]
    out: dict[str, dict] = {}
    for scenario in scenarios:
        expected = json.loads((scenario / "expected.json").read_text())
        records: dict[str, list[EvaluationRecord]] = defaultdict(list)
        for trace in load_traces(scenario):
            for record in run_evaluators(trace, evaluators):
                records[record.evaluator].append(record)
        out[scenario.name] = {"expected": {t["trace_id"]: t for t in expected["traces"]}, "records": records}
    return out


def all_records(corpus_records, evaluator: str) -> list[tuple[str, EvaluationRecord]]:
    return [(name, r) for name, data in corpus_records.items() for r in data["records"][evaluator]]


def test_no_rule_errors_on_any_corpus_trace(corpus_records) -> None:
    errors = [
        (name, r.evaluator, r.explanation)
        for name, data in corpus_records.items()
        for records in data["records"].values()
        for r in records
        if r.skip_reason == "error"
    ]
    assert errors == []
    for name, data in corpus_records.items():
        assert set(data["records"]) >= {"latency", "error_free", "refusal"}, name


def test_every_verdict_is_the_score_against_the_threshold(corpus_records) -> None:
    thresholds = {name: builtin(name).threshold for name in RULES}
    scored = [r for _, data in corpus_records.items() for rs in data["records"].values() for r in rs if r.scored]
    assert len(scored) > 100
    assert all(r.passed is (r.score >= thresholds[r.evaluator]) for r in scored)
    unconfigured = all_records(corpus_records, "prohibited_content")
    assert unconfigured and all(r.skip_reason == "not_configured" for _, r in unconfigured)


def test_error_free_fails_exactly_on_traces_with_errors(corpus_records) -> None:
    seen = 0
    for name, data in corpus_records.items():
        for record in data["records"]["error_free"]:
            facts = data["expected"][record.trace_id]
            assert record.passed is (not facts["has_error"]), (name, record.explanation)
            for span_name in facts["error_spans"]:
                assert span_name in record.explanation
            seen += 1
    assert seen == sum(len(d["expected"]) for d in corpus_records.values())


def test_tool_success_rate_is_below_one_exactly_on_traces_with_tool_errors(corpus_records) -> None:
    failing_scenarios = set()
    for name, data in corpus_records.items():
        by_trace: dict[str, list[EvaluationRecord]] = defaultdict(list)
        for record in data["records"]["tool_success_rate"]:
            if not record.skipped:
                by_trace[record.trace_id].append(record)
        for trace_id, facts in data["expected"].items():
            scored = by_trace[trace_id]
            if facts["has_error"]:  # in the corpus every error is a failed tool call (convert_currency, ...)
                assert any(r.score < 1.0 and r.passed is False for r in scored), name
                assert any(tool in r.explanation for r in scored for tool in facts["tool_calls"]), name
                failing_scenarios.add(name)
            else:
                assert all(r.score == 1.0 for r in scored), name
    assert {n for n in corpus_records if n.endswith("tool_error")} <= failing_scenarios


def test_token_budget_matches_the_expected_token_counts(corpus_records) -> None:
    for name, data in corpus_records.items():
        for record in data["records"]["token_budget"]:
            facts = data["expected"][record.trace_id]
            if facts["llm_calls"] == 0:  # e.g. LlamaIndex building an index: embeddings only
                assert record.skipped, name
                continue
            assert not record.skipped, name
            assert record.details["input_tokens"] == facts["input_tokens"], name
            assert record.details["output_tokens"] == facts["output_tokens"], name
            assert record.passed is True


def test_tool_rules_pass_on_the_corpus(corpus_records) -> None:
    for evaluator in ("hallucinated_tool", "tool_arguments_valid", "loop_detection"):
        records = all_records(corpus_records, evaluator)
        scored = [(name, r) for name, r in records if not r.skipped]
        assert len(scored) >= 10, evaluator
        assert all(r.passed for _, r in scored), [(n, r.explanation) for n, r in scored if not r.passed]


def test_refusal_flags_the_give_up_answers_after_tool_errors(corpus_records) -> None:
    flagged = 0
    for name, data in corpus_records.items():
        for record in data["records"]["refusal"]:
            facts = data["expected"][record.trace_id]
            if record.skipped:
                assert facts["output_contains"] is None, name
            elif facts["has_error"]:  # "Sorry, I couldn't convert USD to JPY right now because ..."
                assert record.passed is False and "Sorry, I couldn't" in record.explanation, name
                flagged += 1
            else:
                assert record.passed is True, (name, record.explanation)
    assert flagged >= 6


def test_llm_rules_pass_on_the_corpus(corpus_records) -> None:
    for evaluator in ("finish_reason", "pii_leak", "non_empty_response", "response_length"):
        scored = [(n, r) for n, r in all_records(corpus_records, evaluator) if not r.skipped]
        assert scored, evaluator
        assert all(r.passed for _, r in scored), [(n, r.explanation) for n, r in scored if not r.passed]
    # content capture off: the responses are unrecorded, not empty
    default = corpus_records["adk_native__tool_agent_default"]["records"]["non_empty_response"]
    assert default and all(r.skip_reason == "no_data" for r in default)


def test_cost_budget_is_estimated_for_every_corpus_trace(corpus_records) -> None:
    for name, record in all_records(corpus_records, "cost_budget"):
        if corpus_records[name]["expected"][record.trace_id]["llm_calls"] == 0:  # embeddings only
            assert record.skipped, name
            continue
        assert not record.skipped, (name, record.explanation)
        assert 0 < record.details["cost_usd"] < 0.01 and record.passed is True


def test_rules_never_error_on_odd_views() -> None:
    odd_tools = [
        {"name": "get_weather", "parameters": {"type": 5, "properties": [], "required": "city", "minimum": "3"}},
        {"name": "lookup", "parameters": {"type": "object", "items": [{"type": "string"}], "enum": "x"}},
        {"name": "nothing"},
    ]
    root = agent("odd")
    traces = [
        trace_of(make_span("plain", {})),
        trace_of(chat(None, finish=None, input_tokens=None, output_tokens=None)),
        trace_of(chat("x", **{"gen_ai.output.messages": "{not json", "gen_ai.tool.definitions": "[1, null]"})),
        trace_of(
            root,
            chat(None, [("get_weather", "raw"), ("lookup", '"a string"'), ("", None)], tools=odd_tools, parent=root),
            tool("get_weather", "raw text", parent=root),
            make_span("execute_tool lookup", {"gen_ai.operation.name": "execute_tool"}, parent=root, status=2),
            chat("", finish="", parent=root, **{"llm.cost.total": math.nan}),
        ),
        trace_of(agent("idle")),
    ]
    evaluators = [builtin(name) for name in RULES]
    for trace in traces:
        for record in run_evaluators(trace, evaluators):
            assert record.skip_reason != "error", (record.evaluator, record.explanation)
            if record.score is not None:
                assert 0.0 <= record.score <= 1.0


def test_tool_arguments_valid_uses_the_schemas_tool_spans_declare(corpus_records) -> None:
    """Where LLM spans record no offered tools, the executed tools' own schemas (Strands `gen_ai.tool.json_schema`,
    OpenInference `tool.parameters`) are checked: every call of these runs matches its schema."""
    for name in ("strands__tool_agent", "oi_openai_agents__chatcmpl_weather_handoff"):
        scored = [r for r in corpus_records[name]["records"]["tool_arguments_valid"] if r.scored]
        assert scored and all(r.passed and r.details["checked"] == 2 for r in scored), name
