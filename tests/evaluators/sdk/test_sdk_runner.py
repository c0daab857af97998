"""run_evaluators on corpus traces: dispatch per level, record identity, ground truth, errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evaluators import load_traces
from evaluators.sdk import (
    EvalResult,
    EvaluationRecord,
    SkipReason,
    Task,
    aggregate,
    evaluator,
    run_evaluators,
)
from evaluators.traces.model import AgentTrace, LLMSpan, Trace
from tests.evaluators.sdk import sdk_fixture_evals as fx


def _trace(corpus_dir: Path, scenario: str) -> Trace:
    [trace] = load_traces(corpus_dir / scenario)
    return trace


@pytest.fixture(scope="module")
def handoff(corpus_dir: Path) -> Trace:
    return _trace(corpus_dir, "adk_native__handoff")  # 2 agents, 3 LLM calls


@pytest.fixture(scope="module")
def tool_agent(corpus_dir: Path) -> Trace:
    return _trace(corpus_dir, "oi_openai__tool_agent")  # 1 agent, 3 LLM calls


@evaluator("count_trace")
def count_trace(trace: Trace) -> float:
    return 1.0


@evaluator("count_agent")
def count_agent(agent: AgentTrace) -> float:
    return 1.0


@evaluator("count_llm")
def count_llm(call: LLMSpan) -> float:
    return 1.0


COUNTERS = [count_trace, count_agent, count_llm]


@pytest.mark.parametrize(("scenario", "agents", "calls"), [("handoff", 2, 3), ("tool_agent", 1, 3)])
def test_dispatch_counts_per_level(scenario: str, agents: int, calls: int, request: pytest.FixtureRequest) -> None:
    trace = request.getfixturevalue(scenario)
    records = run_evaluators(trace, COUNTERS)
    per_evaluator = Counter(r.evaluator for r in records)
    assert per_evaluator == {"count_trace": 1, "count_agent": agents, "count_llm": calls}
    assert all(r.level == r.evaluator.removeprefix("count_") for r in records)
    assert all(r.score == 1.0 and r.passed is True and not r.skipped for r in records)


def test_records_carry_the_identity_of_what_was_evaluated(handoff: Trace) -> None:
    records = run_evaluators(handoff, COUNTERS)
    by_level: dict[str, list[EvaluationRecord]] = {}
    for record in records:
        by_level.setdefault(record.level, []).append(record)
        assert record.trace_id == handoff.trace_id
        assert record.service == handoff.service_name == "adk_native"
        assert record.duration_ms >= 0.0

    [trace_record] = by_level["trace"]
    assert trace_record.span_id == handoff.root.span_id
    assert trace_record.agent_name is None

    agents = handoff.agent_traces()
    assert [(r.span_id, r.agent_name) for r in by_level["agent"]] == [(a.agent_span_id, a.agent_name) for a in agents]
    assert [r.agent_name for r in by_level["agent"]] == ["triage_agent", "flight_agent"]

    calls = handoff.get_llm_calls()
    assert [(r.span_id, r.agent_name, r.model) for r in by_level["llm"]] == [
        (c.span_id, c.agent_name, c.model) for c in calls
    ]
    assert {r.model for r in by_level["llm"]} == {"gemini-2.0-flash"}


def test_monitor_mode_skips_evaluators_that_need_ground_truth(handoff: Trace) -> None:
    task = Task(task_id="t1", expected_output="anything")
    records = run_evaluators(handoff, [fx.exact_answer, count_trace], mode="monitor", task=task)
    [skipped, scored] = records
    assert skipped.skipped and skipped.skip_reason is SkipReason.NEEDS_GROUND_TRUTH
    assert skipped.score is None and skipped.passed is None
    assert skipped.task_id is None  # monitor mode ignores the task
    assert scored.score == 1.0


def test_needs_ground_truth_skips_are_counted_apart_from_scores(handoff: Trace) -> None:
    @evaluator("half")
    def half(trace: Trace) -> float:
        return 0.25

    records = run_evaluators(handoff, [fx.exact_answer, half]) + run_evaluators(handoff, [half])
    summaries = {s.evaluator: s for s in aggregate(records)}
    gt = summaries["fixture_exact_answer"]
    assert (gt.total, gt.count, gt.skipped) == (1, 0, 1)
    assert gt.skip_counts == {"needs_ground_truth": 1}
    assert gt.mean is None and gt.pass_rate is None
    assert (summaries["half"].mean, summaries["half"].pass_rate) == (0.25, 0.0)


def test_experiment_mode_gives_the_task(handoff: Trace) -> None:
    matching = Task(task_id="t1", expected_output=handoff.output)
    wrong = Task(task_id="t2", expected_output="not the answer")
    [hit] = run_evaluators(handoff, [fx.exact_answer], mode="experiment", task=matching)
    [miss] = run_evaluators(handoff, [fx.exact_answer], mode="experiment", task=wrong)
    assert (hit.score, hit.passed, hit.task_id) == (1.0, True, "t1")
    assert (miss.score, miss.passed, miss.task_id) == (0.0, False, "t2")
    [no_task] = run_evaluators(handoff, [fx.exact_answer], mode="experiment")
    assert no_task.skip_reason is SkipReason.NEEDS_GROUND_TRUTH


def test_adapting_evaluators_get_the_task_only_in_experiment_mode(handoff: Trace) -> None:
    seen: list[str | None] = []

    @evaluator("adapts")
    def adapts(agent: AgentTrace, task: Task | None = None) -> float:
        seen.append(task.task_id if task else None)
        return 1.0

    task = Task(task_id="t9")
    run_evaluators(handoff, [adapts], mode="monitor", task=task)
    run_evaluators(handoff, [adapts], mode="experiment", task=task)
    assert seen == [None, None, "t9", "t9"]  # once per agent


def test_an_exception_becomes_an_error_skip_without_affecting_others(handoff: Trace) -> None:
    @evaluator("explodes")
    def explodes(call: LLMSpan) -> float:
        raise KeyError("x" * 1000)

    @evaluator("out_of_range")
    def out_of_range(trace: Trace) -> float:
        return 7.0

    records = run_evaluators(handoff, [count_trace, explodes, out_of_range, count_llm])
    counts = Counter(r.evaluator for r in records)
    assert counts == {"count_trace": 1, "explodes": 3, "out_of_range": 1, "count_llm": 3}
    errors = [r for r in records if r.evaluator == "explodes"]
    for record in errors:
        assert record.skipped and record.skip_reason is SkipReason.ERROR
        assert record.explanation.startswith("KeyError: ")
        assert len(record.explanation) < 400  # the message is truncated
        assert record.details == {"exception": "KeyError"}
        assert record.span_id is not None
    [bad] = [r for r in records if r.evaluator == "out_of_range"]
    assert bad.skip_reason is SkipReason.ERROR and "ValueError" in bad.explanation
    assert all(r.score == 1.0 for r in records if r.evaluator.startswith("count_"))


def test_explicit_skips_and_thresholds_pass_through(handoff: Trace) -> None:
    @evaluator("no_data", threshold=0.9)
    def no_data(trace: Trace, give_up: bool = True) -> EvalResult:
        if give_up:
            return EvalResult.skip("no_data", "nothing to judge")
        return EvalResult(0.8, details={"k": 1})

    [skipped] = run_evaluators(handoff, [no_data])
    assert (skipped.skip_reason, skipped.explanation) == (SkipReason.NO_DATA, "nothing to judge")
    [scored] = run_evaluators(handoff, [no_data.with_config(give_up=False)])
    assert (scored.score, scored.passed, scored.details) == (0.8, False, {"k": 1})
    [lenient] = run_evaluators(handoff, [no_data.with_config(give_up=False).with_threshold(0.5)])
    assert lenient.passed is True


def test_bad_arguments(handoff: Trace) -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        run_evaluators(handoff, COUNTERS, mode="offline")
    with pytest.raises(TypeError, match="not an evaluator"):
        run_evaluators(handoff, [lambda trace: 1.0])
    assert run_evaluators(handoff, []) == []


def test_class_based_evaluators_run_too(tool_agent: Trace) -> None:
    records = run_evaluators(tool_agent, [fx.SpanBudget(max_spans=1), fx.SpanBudget()])
    assert [(r.evaluator, r.score, r.passed) for r in records] == [
        ("fixture_span_budget", 0.0, False),
        ("fixture_span_budget", 1.0, True),
    ]


class _BrokenViews:
    """A trace whose agent views cannot be built."""

    trace_id = "ab" * 16
    service_name = "svc"
    root = None

    def agent_traces(self) -> list[AgentTrace]:
        raise RuntimeError("views broke")

    def get_llm_calls(self) -> list[LLMSpan]:
        return []


def test_a_view_failure_becomes_one_error_skip_per_evaluator() -> None:
    records = run_evaluators(_BrokenViews(), [count_trace, count_agent, count_llm])  # type: ignore[arg-type]
    assert [(r.evaluator, r.skipped, r.skip_reason) for r in records] == [
        ("count_trace", False, None),
        ("count_agent", True, SkipReason.ERROR),
    ]
    assert records[1].explanation == "RuntimeError: views broke"
    assert records[0].span_id is None  # no root span
