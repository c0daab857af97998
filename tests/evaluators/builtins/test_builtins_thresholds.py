"""One pass rule for every builtin: `passed` is `score >= threshold`, and each default threshold keeps the
verdict the builtin always gave (a budget passes within its limit, a 0/1 rule passes at 1)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from evaluators import aggregate, builtin, list_builtins, run_evaluators
from evaluators.builtins._common import decay_score
from evaluators.traces.records import SpanRecord
from tests.support.builtins_spans import agent, chat, tool
from tests.support.spanfactory import make_span, next_start, trace_of

MS = 1_000_000
BUDGETS = ("latency", "token_budget", "cost_budget", "llm_call_budget", "agent_efficiency")


def timed_trace(duration_ms: float):
    start = next_start()
    return trace_of(make_span("run", {}, start=start, end=start + int(duration_ms * MS)))


def agent_of(*children: Callable[[SpanRecord], SpanRecord]):
    root = agent("bot")
    [subject] = trace_of(root, *(child(root) for child in children)).agent_traces()
    return subject


def _chats(count: int) -> list[Callable[[SpanRecord], SpanRecord]]:
    return [lambda p: chat("x", parent=p)] * count


# (evaluator, params, subject at the limit, subject a little over it)
CASES: dict[str, tuple[dict[str, Any], Any, Any]] = {
    "latency": ({"max_latency_ms": 1000}, timed_trace(1000), timed_trace(1100)),
    "token_budget": (
        {"max_tokens": 1000},
        trace_of(chat("a", input_tokens=900, output_tokens=100)),
        trace_of(chat("a", input_tokens=1000, output_tokens=100)),
    ),
    "cost_budget": (
        {"max_cost_usd": 1.0, "prices": {"my-model": [1.0, 0.0]}},  # $1 per 1K input tokens
        trace_of(chat("a", model="my-model", input_tokens=1000, output_tokens=10)),
        trace_of(chat("a", model="my-model", input_tokens=1100, output_tokens=10)),
    ),
    "llm_call_budget": ({"max_llm_calls": 10}, agent_of(*_chats(10)), agent_of(*_chats(11))),
    "agent_efficiency": (
        {"max_llm_per_tool": 2.0},
        agent_of(lambda p: tool("t", {}, parent=p), *_chats(2)),
        agent_of(lambda p: tool("t", {}, parent=p), *_chats(3)),
    ),
}


@pytest.mark.parametrize("name", BUDGETS)
def test_budget_default_threshold_passes_within_and_fails_over_the_limit(name: str) -> None:
    params, at_limit, over = CASES[name]
    evaluator = builtin(name, **params)
    assert evaluator.threshold == 1.0 and evaluator.info.threshold == 1.0
    within = evaluator.run(at_limit)
    assert (within.score, within.passed) == (1.0, True), within.explanation
    beyond = evaluator.run(over)
    assert 0.0 < beyond.score < 1.0 and beyond.passed is False, beyond.explanation
    assert "over" in beyond.explanation


@pytest.mark.parametrize("name", BUDGETS)
def test_a_lower_threshold_lets_a_result_a_little_over_budget_pass(name: str) -> None:
    params, _, over = CASES[name]
    scored = builtin(name, **params).run(over)
    assert builtin(name, **params).with_threshold(scored.score).run(over).passed is True
    assert builtin(name, **params).with_threshold(0.1).run(over).passed is True


def test_a_value_over_the_limit_never_scores_1() -> None:
    just_over = math.nextafter(1000.0, math.inf)
    assert decay_score(just_over, 1000.0, 100.0) < 1.0  # 1 - 1.1e-18 would round to 1.0
    assert builtin("latency", max_latency_ms=1000.0, decay=100.0).run(timed_trace(1000.001)).passed is False
    assert decay_score(30000.0, 30000.0, 2.0) == 1.0
    assert decay_score(31000.0, 30000.0, 1.0) == 0.0


def test_two_latency_thresholds_over_the_same_traces_give_different_pass_rates() -> None:
    traces = [timed_trace(ms) for ms in (900, 1000, 1400, 1800)]  # scores 1, 1, 0.6, 0.2
    strict = builtin("latency", max_latency_ms=1000).with_threshold(0.9)
    lenient = builtin("latency", max_latency_ms=1000).with_threshold(0.1)
    records = [r for trace in traces for r in run_evaluators(trace, [strict])]
    assert [r.score for r in records] == pytest.approx([1.0, 1.0, 0.6, 0.2])
    [summary] = aggregate(records)
    assert summary.pass_rate == 0.5
    records = [r for trace in traces for r in run_evaluators(trace, [lenient])]
    [summary] = aggregate(records)
    assert summary.pass_rate == 1.0


def test_binary_rules_keep_their_verdicts_and_threshold_0_passes_everything() -> None:
    failing = trace_of(chat("ok"), tool("t", {}, error="boom"))
    error_free = builtin("error_free")
    assert error_free.threshold == 0.5 and error_free.run(failing).passed is False
    assert error_free.with_threshold(1.0).run(failing).passed is False
    assert error_free.with_threshold(0.0).run(failing).passed is True  # the documented meaning of 0


def test_every_builtin_documents_a_threshold_in_0_1() -> None:
    for info in list_builtins():
        assert 0.0 <= info.threshold <= 1.0, info.name
        if info.name in BUDGETS:
            assert "threshold 1" in info.description, info.name
