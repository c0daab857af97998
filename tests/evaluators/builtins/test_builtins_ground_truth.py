"""Ground-truth builtins: exact/contains/response match, tool trajectory, retrieval ranking, constraints."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from evaluators.builtins.ground_truth import rouge1_f1
from evaluators.sdk import Constraints, EvalResult, SkipReason, Task, TrajectoryStep, builtin, list_builtins
from evaluators.sdk import run_evaluators as run_all
from evaluators.traces import Trace
from tests.support.spanfactory import make_span, trace_of

MS = 1_000_000
GROUND_TRUTH = (
    "exact_match",
    "contains_match",
    "tool_trajectory",
    "response_match",
    "precision_at_k",
    "recall_at_k",
    "mrr",
    "ndcg_at_k",
    "constraints",
)


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def agent_trace(
    output: str | None = "It is 18°C and raining in Paris.",
    question: str = "Weather in Paris?",
    tools: list[tuple[str, Any]] = (),
    retrievals: list[list[Any]] = (),
    llm_calls: int = 1,
    tokens: tuple[int, int] | None = (100, 20),
    cost: float | None = None,
    duration_ms: int = 50,
) -> Trace:
    """An agent span carrying the question and answer, with LLM calls, tool calls and retrievals below it."""
    start = 1_700_000_000_000_000_000
    attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}
    attrs["gen_ai.input.messages"] = messages("user", question)
    if output is not None:
        attrs["gen_ai.output.messages"] = messages("assistant", output)
    root = make_span("invoke_agent helper", attrs, start=start, end=start + duration_ms * MS)
    spans = [root]
    at = start + MS
    for _ in range(llm_calls):
        chat: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
        if tokens is not None:
            chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"] = tokens
        if cost is not None:
            chat |= {"openinference.span.kind": "LLM", "llm.cost.total": cost / llm_calls}
        spans.append(make_span("chat m", chat, parent=root, start=at, end=at + MS))
        at += 2 * MS
    for name, args in tools:
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        if args is not None:
            tool["gen_ai.tool.call.arguments"] = json.dumps(args)
        spans.append(make_span(f"execute_tool {name}", tool, parent=root, start=at, end=at + MS))
        at += 2 * MS
    for documents in retrievals:
        docs = [{"id": d, "content": f"doc {d}"} if d is not None else {"content": "anonymous"} for d in documents]
        retrieval = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": "paris weather",
            "gen_ai.retrieval.documents": json.dumps(docs),
        }
        spans.append(make_span("retrieval", retrieval, parent=root, start=at, end=at + MS))
        at += 2 * MS
    return trace_of(*spans)


def run(name: str, trace: Trace, task: Task, **params: Any) -> EvalResult:
    return builtin(name, **params).run(trace, task=task)


def task(**fields: Any) -> Task:
    return Task(task_id="t1", **fields)


def assert_no_data(result: EvalResult, mentions: str) -> None:
    assert result.is_skipped and result.skip_reason is SkipReason.NO_DATA
    assert mentions in result.explanation


# --- catalog and modes --------------------------------------------------------------------------


def test_every_ground_truth_builtin_is_registered_as_a_rule_needing_ground_truth() -> None:
    infos = {info.name: info for info in list_builtins()}
    for name in GROUND_TRUTH:
        assert name in infos, name
        assert infos[name].needs_ground_truth is True, name
        assert infos[name].kind == "rule" and infos[name].level == "trace", name


def test_monitor_mode_skips_every_ground_truth_builtin_with_needs_ground_truth() -> None:
    trace = agent_trace(tools=[("get_weather", {"city": "Paris"})], retrievals=[["d1"]])
    full = task(expected_output="x", expected_trajectory=[{"tool": "get_weather"}], relevant_document_ids=["d1"])
    records = run_all(trace, [builtin(n) for n in GROUND_TRUTH], mode="monitor", task=full)
    assert [r.evaluator for r in records] == list(GROUND_TRUTH)
    assert all(r.skipped and r.skip_reason is SkipReason.NEEDS_GROUND_TRUTH for r in records)
    scored = run_all(trace, [builtin("tool_trajectory")], mode="experiment", task=full)
    assert scored[0].scored and scored[0].passed is True and scored[0].task_id == "t1"


# --- exact_match, contains_match -----------------------------------------------------------------


def test_exact_match_ignores_case_and_surrounding_whitespace_by_default() -> None:
    trace = agent_trace(output="  It is 18°C and RAINING in Paris.\n")
    result = run("exact_match", trace, task(expected_output="it is 18°c and raining in paris."))
    assert (result.score, result.passed) == (1.0, True)


def test_exact_match_fails_on_different_text_and_quotes_both() -> None:
    result = run("exact_match", agent_trace(output="Sunny."), task(expected_output="Rainy."))
    assert (result.score, result.passed) == (0.0, False)
    assert "'Sunny.'" in result.explanation and "'Rainy.'" in result.explanation


def test_exact_match_params_make_case_and_whitespace_count() -> None:
    trace = agent_trace(output="Rainy.")
    assert run("exact_match", trace, task(expected_output="rainy."), case_sensitive=True).passed is False
    assert run("exact_match", trace, task(expected_output="Rainy.\n"), strip=False).passed is False
    assert run("exact_match", trace, task(expected_output="Rainy.\n")).passed is True


def test_exact_match_skips_without_expected_output_or_trace_output() -> None:
    assert_no_data(run("exact_match", agent_trace(), task()), "expected_output")
    assert_no_data(run("exact_match", agent_trace(output=None, llm_calls=0), task(expected_output="x")), "output")


def test_contains_match_passes_when_expected_is_inside_output() -> None:
    trace = agent_trace(output="It is 18°C and raining in Paris. Take an umbrella.")
    assert run("contains_match", trace, task(expected_output="TAKE AN UMBRELLA")).passed is True
    failed = run("contains_match", trace, task(expected_output="wear sunglasses"))
    assert (failed.score, failed.passed) == (0.0, False)
    assert "not found" in failed.explanation
    assert run("contains_match", trace, task(expected_output="TAKE AN UMBRELLA"), case_sensitive=True).passed is False
    assert_no_data(run("contains_match", trace, task()), "expected_output")


# --- response_match ------------------------------------------------------------------------------


def test_rouge1_f1_counts_repeated_words_once_per_occurrence() -> None:
    f1, precision, recall = rouge1_f1("a a b", "a b")
    assert (precision, recall) == (pytest.approx(2 / 3), 1.0)
    assert f1 == pytest.approx(0.8)
    assert rouge1_f1("", "") == (1.0, 1.0, 1.0)
    assert rouge1_f1("words", "") == (0.0, 0.0, 0.0)


def test_response_match_scores_rouge1_f1_with_lowercase_word_tokens() -> None:
    same = run("response_match", agent_trace(output="The cat, sat!"), task(expected_output="the CAT sat"))
    assert same.score == pytest.approx(1.0) and same.passed is True
    partial = run("response_match", agent_trace(output="the cat sat"), task(expected_output="the cat ran"))
    assert partial.score == pytest.approx(2 / 3) and partial.passed is True
    assert partial.details["precision"] == pytest.approx(2 / 3)
    low = run("response_match", agent_trace(output="a dog ran far away"), task(expected_output="the cat sat"))
    assert low.score == 0.0 and low.passed is False


def test_response_match_threshold_defaults_to_half_and_is_configurable() -> None:
    evaluator = builtin("response_match")
    assert evaluator.threshold == 0.5
    trace, expected = agent_trace(output="the cat sat"), task(expected_output="the cat ran")
    assert evaluator.with_threshold(0.9).run(trace, task=expected).passed is False
    assert_no_data(run("response_match", trace, task()), "expected_output")


# --- tool_trajectory -----------------------------------------------------------------------------

WEATHER = ("get_weather", {"city": "Paris"})
OUTFIT = ("suggest_outfit", {"temperature_c": 18})
NEWS = ("get_news", {"topic": "paris"})


def steps(*items: str | tuple[str, dict[str, Any]]) -> list[TrajectoryStep]:
    return [
        TrajectoryStep(tool=item) if isinstance(item, str) else TrajectoryStep(tool=item[0], args=item[1])
        for item in items
    ]


def trajectory(tools: list[tuple[str, Any]], expected: list[TrajectoryStep], **params: Any) -> EvalResult:
    return run("tool_trajectory", agent_trace(tools=tools), task(expected_trajectory=expected), **params)


def test_tool_trajectory_exact_needs_same_calls_same_order_and_given_args() -> None:
    assert trajectory([WEATHER, OUTFIT], steps(WEATHER, "suggest_outfit")).passed is True
    extra = trajectory([WEATHER, NEWS, OUTFIT], steps(WEATHER, "suggest_outfit"))
    assert (extra.score, extra.passed) == (0.0, False)
    assert "EXACT" in extra.explanation and "get_news" in extra.explanation
    assert trajectory([OUTFIT, WEATHER], steps(WEATHER, "suggest_outfit")).passed is False
    wrong_args = trajectory([("get_weather", {"city": "Rome"}), OUTFIT], steps(WEATHER, "suggest_outfit"))
    assert wrong_args.passed is False
    assert wrong_args.details["actual"] == ["get_weather", "suggest_outfit"]


def test_tool_trajectory_in_order_allows_calls_between_but_not_reordering() -> None:
    expected = steps("get_weather", "suggest_outfit")
    assert trajectory([WEATHER, NEWS, OUTFIT], expected, mode="IN_ORDER").passed is True
    reordered = trajectory([OUTFIT, WEATHER], expected, mode="IN_ORDER")
    assert reordered.passed is False
    assert reordered.details["missing"] == ["suggest_outfit"]


def test_tool_trajectory_any_order_needs_a_distinct_call_per_step() -> None:
    expected = steps("suggest_outfit", "get_weather")
    assert trajectory([WEATHER, NEWS, OUTFIT], expected, mode="ANY_ORDER").passed is True
    twice = trajectory([WEATHER, OUTFIT], steps("get_weather", "get_weather"), mode="ANY_ORDER")
    assert twice.passed is False and twice.details["missing"] == ["get_weather"]
    assert "get_weather" in twice.explanation


def test_tool_trajectory_args_options() -> None:
    call = [("get_weather", {"city": "Paris", "units": "C"})]
    expected = steps(("get_weather", {"city": "Paris"}))
    assert trajectory(call, expected).passed is False  # exact args by default
    assert trajectory(call, expected, args_match="subset").passed is True
    assert trajectory(call, steps(("get_weather", {"city": "Rome"})), args_match="subset").passed is False
    assert trajectory(call, steps(("get_weather", {"city": "Rome"})), check_args=False).passed is True


def test_tool_trajectory_empty_expectation_means_no_tools_in_exact_mode() -> None:
    assert trajectory([], []).passed is True
    assert trajectory([WEATHER], []).passed is False
    assert trajectory([WEATHER], [], mode="ANY_ORDER").passed is True


def test_tool_trajectory_skips_without_expected_trajectory_and_rejects_unknown_mode() -> None:
    assert_no_data(run("tool_trajectory", agent_trace(tools=[WEATHER]), task()), "expected_trajectory")
    with pytest.raises(ValueError, match="mode"):
        builtin("tool_trajectory", mode="SOMETIMES")


# --- retrieval -----------------------------------------------------------------------------------

RANKED = [["d3", "d1"], ["d7", "d1", "d2"]]  # two retrievals; the repeated d1 counts once
RELEVANT = task(relevant_document_ids=["d1", "d2", "d9"])


@pytest.mark.parametrize(
    ("name", "k", "expected"),
    [
        ("precision_at_k", 5, 2 / 5),
        ("precision_at_k", 2, 1 / 2),
        ("recall_at_k", 5, 2 / 3),
        ("recall_at_k", 2, 1 / 3),
        ("mrr", 5, 1 / 2),
        ("mrr", 1, 0.0),
        ("ndcg_at_k", 5, (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 1 / math.log2(4))),
        ("ndcg_at_k", 2, (1 / math.log2(3)) / (1 + 1 / math.log2(3))),
    ],
)
def test_retrieval_metrics_over_ranked_document_ids(name: str, k: int, expected: float) -> None:
    result = run(name, agent_trace(retrievals=RANKED), RELEVANT, k=k)
    assert result.score == pytest.approx(expected)
    assert result.details["retrieved"] == 4 and result.details["k"] == k


def test_retrieval_metrics_reach_one_for_a_perfect_ranking_and_zero_for_none_relevant() -> None:
    perfect = agent_trace(retrievals=[["d1", "d2", "d9"]])
    for name in ("recall_at_k", "mrr", "ndcg_at_k"):
        assert run(name, perfect, RELEVANT).score == pytest.approx(1.0), name
    assert run("precision_at_k", perfect, RELEVANT, k=3).passed is True
    missed = agent_trace(retrievals=[["x1", "x2"]])
    for name in ("precision_at_k", "recall_at_k", "mrr", "ndcg_at_k"):
        result = run(name, missed, RELEVANT)
        assert (result.score, result.passed) == (0.0, False), name
    empty = run("recall_at_k", agent_trace(retrievals=[[]]), RELEVANT)
    assert empty.score == 0.0


def test_documents_without_ids_take_a_rank_but_never_match() -> None:
    result = run("mrr", agent_trace(retrievals=[[None, "d2"]]), RELEVANT)
    assert result.score == pytest.approx(1 / 2)


def test_retrieval_metrics_skip_without_relevant_ids_retrievals_or_document_ids() -> None:
    for name in ("precision_at_k", "recall_at_k", "mrr", "ndcg_at_k"):
        assert_no_data(run(name, agent_trace(retrievals=RANKED), task()), "relevant_document_ids")
        assert_no_data(run(name, agent_trace(), RELEVANT), "no retrieval spans")
        assert_no_data(run(name, agent_trace(retrievals=[[None, None]]), RELEVANT), "no ids")


# --- constraints ---------------------------------------------------------------------------------


def test_constraints_all_met() -> None:
    trace = agent_trace(llm_calls=2, tokens=(100, 20), duration_ms=50, cost=0.02)
    limits = Constraints(max_latency_ms=100, max_tokens=240, max_iterations=2, max_cost=0.05)
    result = run("constraints", trace, task(constraints=limits))
    assert (result.score, result.passed) == (1.0, True)
    assert result.explanation.startswith("4 of 4 constraints met")


def test_constraints_score_is_the_share_met_and_violations_are_listed() -> None:
    trace = agent_trace(llm_calls=3, tokens=(100, 20), duration_ms=500)
    limits = Constraints(max_latency_ms=100, max_tokens=1000, max_iterations=2)
    result = run("constraints", trace, task(constraints=limits))
    assert result.score == pytest.approx(1 / 3) and result.passed is False
    assert "max_latency_ms 500 > 100" in result.explanation and "max_iterations 3 > 2" in result.explanation
    assert "max_tokens" not in result.explanation
    assert result.details["constraints"]["max_tokens"] == {"limit": 1000, "value": 360.0, "met": True}


def test_constraints_leave_out_what_the_trace_does_not_report() -> None:
    no_usage = agent_trace(tokens=None)
    result = run("constraints", no_usage, task(constraints=Constraints(max_tokens=10, max_cost=1.0, max_iterations=5)))
    assert result.score == 1.0 and result.details["unmeasured"] == ["max_tokens", "max_cost"]
    assert "not measured: max_tokens, max_cost" in result.explanation
    assert_no_data(run("constraints", no_usage, task(constraints=Constraints(max_cost=1.0))), "max_cost")


def test_constraints_skip_without_constraints() -> None:
    assert_no_data(run("constraints", agent_trace(), task()), "no constraints")
    assert_no_data(run("constraints", agent_trace(), task(constraints=Constraints())), "no constraints")
