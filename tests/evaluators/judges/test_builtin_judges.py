"""Builtin LLM judges on real corpus traces: each prompt holds the trace's own evidence; skips; the catalog."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from evaluators import Task, Trace, builtin, list_builtins, load_traces
from evaluators.judges import DATA_RULE, JudgeRequest, LLMJudge, PreparedJudgement, prepare
from evaluators.judges.builtins_task import GENERIC_CRITERIA
from evaluators.sdk import default_builtins, in_default_set
from monitor.cli import main
from tests.conftest import CORPUS
from tests.support.promptcheck import blocks, question_of

JUDGES = {
    "hallucination": "trace",
    "task_completion": "trace",
    "faithfulness": "trace",
    "answer_relevance": "trace",
    "context_relevance": "trace",
    "completeness": "trace",
    "helpfulness": "trace",
    "rubric_response_quality": "trace",
    "rubric_tool_use_quality": "trace",
    "final_response_match": "trace",
    "answer_correctness": "trace",
    "safety": "llm",
    "coherence": "llm",
    "instruction_following": "llm",
    "tone": "llm",
    "reasoning_quality": "agent",
    "error_recovery": "agent",
    "path_efficiency": "agent",
    "conversation_completion": "session",
    "user_frustration": "session",
    "knowledge_retention": "session",
    "conversation_coherence": "session",
}
RUBRICS = [{"id": "temp", "text": "The answer gives the temperature."}, {"id": "tools", "text": "Tools were needed."}]
# Scenarios whose trace has tool results and a final answer, one per instrumentation family.
ANSWERED = [
    "oi_openai__tool_agent",
    "tl_openai__tool_agent",
    "otel_genai__tool_agent",
    "adk_native__tool_agent",
    "adk_native__tool_agent_events",
    "adk1_native__weather_handoff",
    "oi_adk__tool_agent",
    "oi_langchain__tool_agent",
    "pydantic_ai__tool_agent",
    "strands__tool_agent",
    "vercel_ai__tool_agent",
]
ERRORED = ["oi_openai__tool_error", "tl_openai__tool_error", "adk_native__tool_error", "otel_genai__tool_error"]


@cache
def scenario(name: str) -> tuple[Trace, dict[str, Any]]:
    """The scenario's (single, last) trace and its expected.json facts."""
    expected = json.loads((CORPUS / name / "expected.json").read_text())
    facts = {t["trace_id"]: t for t in expected["traces"]}
    trace = load_traces(CORPUS / name)[-1]
    return trace, facts[trace.trace_id]


def judge(name: str, **params: Any) -> LLMJudge:
    made = builtin(
        name, **({"rubrics": RUBRICS} if name.startswith("rubric") and "rubrics" not in params else {}), **params
    )
    assert isinstance(made, LLMJudge)
    return made


def judged(
    trace: Trace, name: str, mode: str = "monitor", task: Task | None = None, **params: Any
) -> list[PreparedJudgement]:
    return list(prepare(trace, [judge(name, **params)], mode=mode, task=task))


def prompt(trace: Trace, name: str, **params: Any) -> str:
    [one] = judged(trace, name, **params)
    assert isinstance(one.request, JudgeRequest), one.result
    assert one.request.system.startswith(DATA_RULE) and one.judge.instructions.strip() in one.request.system
    return one.request.prompt


# --- catalog ------------------------------------------------------------------------------------------


def test_catalog_lists_every_judge_as_an_llm_judge_outside_the_default_set() -> None:
    infos = {info.name: info for info in list_builtins()}
    defaults = {info.name for info in default_builtins()}
    for name, level in JUDGES.items():
        info = infos[name]
        assert (info.kind, info.level) == ("llm_judge", level), name
        assert not in_default_set(info) and name not in defaults, name
        assert info.description and all(p.description for p in info.params), name
        assert info.needs_ground_truth is (name in {"final_response_match", "answer_correctness"}), name
        assert info.needs_config is name.startswith("rubric"), name
    assert {n for n, i in infos.items() if i.kind == "llm_judge"} == set(JUDGES)


def test_evaluators_list_shows_the_judges(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluators", "list", "--json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    for name in JUDGES:
        assert listed[name]["kind"] == "llm_judge" and listed[name]["in_default_set"] is False, name


def test_every_judge_declares_a_schema_and_a_rubric() -> None:
    for name in JUDGES:
        made = judge(name)
        assert made.instructions.strip(), name
        assert made.response_schema.model_json_schema()["properties"], name


# --- trace level: the evidence in the prompt -----------------------------------------------------------


@pytest.mark.parametrize("name", ANSWERED)
def test_hallucination_prompt_holds_request_instructions_tool_results_and_answer(name: str) -> None:
    trace, facts = scenario(name)
    found = blocks(prompt(trace, "hallucination"))
    assert facts["input_contains"] in found["user_request"]
    assert facts["output_contains"] in found["final_answer"]
    for tool in facts["tool_calls"]:
        assert f"{tool}(" in found["tool_results"], tool
    assert "temperature_c" in found["tool_results"]  # the get_weather result itself, not only its call
    assert "You" in found["system_instructions"]
    assert "retrieved_documents" not in found


def test_tool_results_come_from_the_spans_with_the_recorded_text() -> None:
    trace, _ = scenario("oi_openai__tool_agent")
    tools = blocks(prompt(trace, "hallucination"))["tool_results"]
    assert '{"city": "Paris", "temperature_c": 18, "conditions": "light rain"}' in tools
    assert "Light waterproof jacket over a sweater; bring an umbrella." in tools


def test_tool_results_fall_back_to_tool_messages_when_spans_lack_them() -> None:
    trace, _ = scenario("otel_genai__manual_loop")  # no tool spans: results only in the chat history
    tools = blocks(prompt(trace, "hallucination"))["tool_results"]
    assert "light rain" in tools and "suggest_outfit(" in tools


@pytest.mark.parametrize("name", ["answer_relevance", "completeness", "helpfulness", "rubric_response_quality"])
@pytest.mark.parametrize("scenario_name", ["oi_openai__tool_agent", "strands__tool_agent", "oi_openai__no_parent"])
def test_answer_judges_show_the_request_and_the_answer(name: str, scenario_name: str) -> None:
    trace, facts = scenario(scenario_name)
    found = blocks(prompt(trace, name))
    assert facts["input_contains"] in found["user_request"]
    assert facts["output_contains"] in found["final_answer"]


def test_task_completion_uses_generic_criteria_by_default() -> None:
    trace, facts = scenario("adk_native__tool_error")
    text = prompt(trace, "task_completion")
    found = blocks(text)
    assert facts["input_contains"] in found["user_request"] and facts["output_contains"] in found["final_answer"]
    assert "convert_currency(" in found["tool_calls"] and "FX rate service unavailable" in found["tool_calls"]
    assert all(c in question_of(text) for c in GENERIC_CRITERIA)


def test_task_completion_criteria_come_from_the_matching_task_type_then_the_param() -> None:
    trace, facts = scenario("oi_openai__tool_agent")
    agent = facts["agents"][0]
    task_types = [
        {"match": {"agent": "nobody"}, "criteria": ["never used"]},
        {"match": {"agent": agent[:4] + "*", "service": trace.service_name}, "criteria": ["States the temperature."]},
    ]
    asked = question_of(prompt(trace, "task_completion", task_types=task_types, criteria=["Fallback."]))
    assert "1. States the temperature." in asked and "never used" not in asked and "Fallback." not in asked
    asked = question_of(prompt(trace, "task_completion", task_types=task_types[:1], criteria=["Fallback."]))
    assert "1. Fallback." in asked


def test_task_completion_matches_root_span_attributes() -> None:
    trace, _ = scenario("oi_openai__tool_agent")
    key, value = "openinference.span.kind", "AGENT"
    assert trace.root is not None and trace.root.attributes[key] == value
    hit = [{"match": {"attribute": {key: value}}, "criteria": ["Hit."]}]
    miss = [{"match": {"attribute": {key: "LLM"}}, "criteria": ["Miss."]}]
    assert "Hit." in question_of(prompt(trace, "task_completion", task_types=hit))
    assert "Miss." not in question_of(prompt(trace, "task_completion", task_types=miss))


@pytest.mark.parametrize(
    "bad",
    [
        {"criteria": "one string"},
        {"criteria": [""]},
        {"task_types": [{"criteria": ["x"], "match": {"model": "gpt"}}]},
        {"task_types": [{"match": {"agent": "a"}}]},
        {"task_types": [{"match": {"attribute": "k=v"}, "criteria": ["x"]}]},
        {"task_types": ["not a mapping"]},
    ],
)
def test_task_completion_rejects_malformed_criteria(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="task_completion: param"):
        judge("task_completion", **bad)


def test_rubric_tool_use_prompt_lists_offered_tools_calls_and_rubrics() -> None:
    trace, facts = scenario("pydantic_ai__tool_agent")
    text = prompt(trace, "rubric_tool_use_quality")
    found = blocks(text)
    for tool in facts["tool_calls"]:
        assert f"- {tool}:" in found["available_tools"] and f"{tool}(" in found["tool_calls"]
    assert "[temp] The answer gives the temperature." in question_of(text)


# --- llm and agent level ------------------------------------------------------------------------------


def test_llm_judges_run_on_every_call_and_see_its_conversation_and_response() -> None:
    trace, facts = scenario("oi_openai__tool_agent")
    safety = judged(trace, "safety")
    assert len(safety) == facts["llm_calls"] and all(p.level == "llm" and p.span_id for p in safety)
    first, *_, last = [blocks(p.request.prompt) for p in safety if p.request]
    assert "get_weather(" in first["response"] and facts["input_contains"] in first["conversation"]
    assert facts["output_contains"] in last["response"] and "[tool result" in last["conversation"]


def test_text_judges_skip_calls_that_only_requested_tools() -> None:
    trace, facts = scenario("oi_openai__tool_agent")
    for name in ("coherence", "tone"):
        results = judged(trace, name)
        skips = [p.result.skip_reason for p in results if p.result is not None]
        assert skips == ["not_applicable"] * (facts["llm_calls"] - 1), name
        [asked] = [p.request for p in results if p.request]
        assert facts["output_contains"] in blocks(asked.prompt)["response"]
    [toned] = [p.request for p in judged(trace, "tone", expected_tone="formal") if p.request]
    assert "Expected tone: formal" in question_of(toned.prompt)


def test_instruction_following_shows_the_calls_own_system_instructions() -> None:
    trace, _ = scenario("adk_native__handoff")  # two agents, each with its own instructions
    seen = [
        blocks(p.request.prompt)["system_instructions"] for p in judged(trace, "instruction_following") if p.request
    ]
    assert any("Route flight questions" in s for s in seen) and any("get_flight" in s for s in seen)
    no_system, _ = scenario("oi_openai__no_parent")
    [skipped] = judged(no_system, "instruction_following")
    assert skipped.result is not None and skipped.result.skip_reason == "no_data"


def test_agent_judges_run_per_agent_on_that_agents_steps() -> None:
    trace, facts = scenario("oi_openai_agents__weather_handoff")
    runs = {p.agent_name: blocks(p.request.prompt) for p in judged(trace, "path_efficiency") if p.request}
    assert set(runs) == set(facts["agents"])
    weather = runs["weather_agent"]
    assert "get_weather(" in weather["steps"] and "suggest_outfit(" in weather["steps"]
    assert "- get_weather:" in weather["available_tools"]
    assert facts["output_contains"] in weather["agent_output"]
    reasoning = [p for p in judged(trace, "reasoning_quality") if p.agent_name == "weather_agent"]
    assert "get_weather(" in blocks(reasoning[0].request.prompt)["steps"]  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ERRORED)
def test_error_recovery_sees_the_error_and_what_followed(name: str) -> None:
    trace, facts = scenario(name)
    [run] = judged(trace, "error_recovery")
    assert run.request is not None, run.result
    found = blocks(run.request.prompt)
    assert "FX rate service unavailable" in found["steps"] or "TOOL_ERROR" in found["steps"]
    assert facts["output_contains"] in found["agent_output"]


def test_error_recovery_is_not_applicable_without_errors() -> None:
    trace, facts = scenario("oi_openai__tool_agent")
    assert not facts["has_error"]
    [run] = judged(trace, "error_recovery")
    assert run.result is not None and run.result.skip_reason == "not_applicable"


# --- skips ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hallucination", "answer_relevance", "completeness", "helpfulness", "faithfulness"])
def test_answer_judges_skip_no_data_without_an_answer(name: str) -> None:
    trace = load_traces(CORPUS / "otel_genai__manual_loop")[0]  # a first loop turn: no final answer
    assert trace.output is None
    [run] = judged(trace, name)
    assert run.result is not None and run.result.skip_reason == "no_data"


def test_rag_judges_skip_no_data_without_retrievals() -> None:
    trace, facts = scenario("oi_openai__tool_agent")
    assert facts["retrieval_documents"] is None
    for name in ("faithfulness", "context_relevance"):
        [run] = judged(trace, name)
        assert run.result is not None and run.result.skip_reason == "no_data", name


def test_rubric_judges_skip_not_configured_without_rubrics() -> None:
    trace, _ = scenario("oi_openai__tool_agent")
    for name in ("rubric_response_quality", "rubric_tool_use_quality"):
        [run] = judged(trace, name, rubrics=[])
        assert run.result is not None and run.result.skip_reason == "not_configured", name
    with pytest.raises(ValueError, match="rubrics"):
        judge("rubric_response_quality", rubrics=[{"id": "a", "text": "x"}, {"id": "a", "text": "y"}])
    with pytest.raises(ValueError, match="rubrics"):
        judge("rubric_response_quality", rubrics=[{"text": "no id"}])


def test_rubric_tool_use_is_not_applicable_without_tools() -> None:
    trace, _ = scenario("oi_openai__no_parent")
    [run] = judged(trace, "rubric_tool_use_quality")
    assert run.result is not None and run.result.skip_reason == "not_applicable"


# --- ground truth ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["final_response_match", "answer_correctness"])
def test_ground_truth_judges_compare_with_the_tasks_expected_output(name: str) -> None:
    trace, facts = scenario("oi_openai__tool_agent")
    task = Task(task_id="t1", input=facts["input_contains"], expected_output="Wear a waterproof jacket.")
    [monitored] = judged(trace, name, task=task)
    assert monitored.result is not None and monitored.result.skip_reason == "needs_ground_truth"
    [run] = judged(trace, name, mode="experiment", task=task)
    assert run.request is not None
    found = blocks(run.request.prompt)
    assert found["reference_answer"] == "Wear a waterproof jacket."
    assert facts["output_contains"] in found["final_answer"] and facts["input_contains"] in found["user_request"]
    [missing] = judged(trace, name, mode="experiment", task=Task(task_id="t2"))
    assert missing.result is not None and missing.result.skip_reason == "no_data"
    assert judge(name).evaluate(trace).skip_reason == "needs_ground_truth"


# --- the whole corpus -------------------------------------------------------------------------------------


def test_every_judge_prepares_every_corpus_trace_without_errors() -> None:
    judges = [judge(name) for name in JUDGES]
    task = Task(task_id="t", expected_output="An answer.")
    seen = 0
    for folder in sorted(p for p in CORPUS.iterdir() if (p / "expected.json").is_file()):
        for trace in load_traces(folder):
            for run in prepare(trace, judges, mode="experiment", task=task):
                seen += 1
                if run.request is not None:
                    blocks(run.request.prompt)
                else:
                    assert run.result is not None and run.result.skip_reason != "error", (folder.name, run.judge.name)
    assert seen > 300
