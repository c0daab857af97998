"""The store's window aggregates as moments: each signal's count, sum and sum of squares, subjects kept in every
window, and the agents and subjects bounded by max_agents and max_subjects."""

from __future__ import annotations

from monitor.detection.model import Moments
from monitor.detection.moments import add_moments, report_moments, select, window_moments
from monitor.store.signal_rows import (
    ResultAggregate,
    SessionAggregate,
    ToolAggregate,
    TraceAggregate,
    WindowAggregates,
)

from .builders import config, key, ratio


def traces(agent: str = "planner", count: int = 100, service: str = "shop") -> TraceAggregate:
    return TraceAggregate(
        service, agent, count, errors=5, llm_calls=300.0, llm_calls_sq=1000.0, tool_calls=200.0,
        tool_calls_sq=500.0, tool_failures=20.0, response_n=90, response_chars=18000.0,
        response_chars_sq=4e6, tokens_n=80, tokens=8e4, tokens_sq=9e7, cost_n=70, cost=0.7, cost_sq=0.01,
        latency_n=100, latency=250.0, latency_sq=700.0,
    )  # fmt: skip


def window(*rows: object) -> WindowAggregates:
    found = WindowAggregates([], [], [], [], [])
    kinds = ((TraceAggregate, found.traces), (ToolAggregate, found.tools), (ResultAggregate, found.results))
    for row in rows:
        for kind, into in (*kinds, (SessionAggregate, found.sessions)):
            if isinstance(row, kind):
                into.append(row)  # type: ignore[arg-type]
    return found


def test_trace_signals() -> None:
    w = window(traces(), ToolAggregate("shop", "planner", "search", 60))
    found = window_moments(w, select(config(), [w]))
    assert found[key("error_rate")] == ratio(100, 5)
    assert found[key("tool_success")] == ratio(200, 180)
    assert found[key("tool_share", "search")] == ratio(100, 60)
    assert found[key("llm_calls")] == Moments(n=100, total=300.0, squares=1000.0)
    assert found[key("tool_calls")] == Moments(n=100, total=200.0, squares=500.0)
    assert found[key("response_length")] == Moments(n=90, total=18000.0, squares=4e6)
    assert found[key("tokens")] == Moments(n=80, total=8e4, squares=9e7)
    assert found[key("cost")] == Moments(n=70, total=0.7, squares=0.01)
    assert found[key("latency")] == Moments(n=100, total=250.0, squares=700.0)


def test_result_and_conversation_signals() -> None:
    w = window(
        ResultAggregate("shop", "planner", "judge", verdicts=40, passed=30, scores_n=40, scores=32.0, scores_sq=26.0),
        SessionAggregate("shop", "resolved", sessions=30, turns=120.0, turns_sq=600.0),
        SessionAggregate("shop", "abandoned", sessions=10, turns=20.0, turns_sq=50.0),
    )
    found = window_moments(w, select(config(), [w]))
    assert found[key("pass_ratio", "judge")] == ratio(40, 30)
    assert found[key("score", "judge")] == Moments(n=40, total=32.0, squares=26.0)
    assert found[key("turns", agent="")] == Moments(n=40, total=140.0, squares=650.0)
    assert found[key("conversation_ended", "resolved", agent="")] == ratio(40, 30)
    assert found[key("conversation_ended", "abandoned", agent="")] == ratio(40, 10)


def test_empty_signals_are_left_out() -> None:
    quiet = traces()._replace(cost_n=0, cost=0.0, cost_sq=0.0, tool_calls=0.0, tool_failures=0.0)
    found = window_moments(window(quiet), select(config(), [window(quiet)]))
    assert key("cost") not in found and key("tool_success") not in found
    assert found[key("tool_calls")] == Moments(n=100, total=0.0, squares=500.0)


def test_a_tool_no_longer_called_has_a_recent_share_of_zero() -> None:
    baseline = window(traces(), ToolAggregate("shop", "planner", "search", 90))
    recent = window(traces())
    got = report_moments(config(), recent, [baseline], window())
    assert got.recent[key("tool_share", "search")] == ratio(100, 0)
    assert got.same_hours[key("tool_share", "search")] == ratio(100, 90)
    assert got.trailing == {}


def test_the_same_hours_are_summed_over_the_days() -> None:
    days = [window(traces(count=100 + d)) for d in range(3)]
    got = report_moments(config(), window(traces()), days, window(traces(count=7)))
    assert got.same_hours[key("error_rate")] == ratio(303, 15)
    assert got.trailing[key("error_rate")] == ratio(7, 5)
    assert add_moments([{key("cost"): ratio(2, 1)}, {key("cost"): ratio(3, 1)}, {}]) == {key("cost"): ratio(5, 2)}


def test_agents_and_subjects_are_bounded_over_all_windows() -> None:
    recent = window(traces("a", 10), traces("b", 50), *(ToolAggregate("shop", "a", f"t{i}", i) for i in range(5)))
    baseline = window(traces("a", 100), traces("c", 20), SessionAggregate("other", "done", 5, 5.0, 5.0))
    chosen = select(config(max_agents=2, max_subjects=2), [recent, baseline])
    assert chosen.agents == {("shop", "a"), ("shop", "b")}
    assert chosen.tools == {("shop", "a"): {"t4", "t3"}}
    assert chosen.services == {"other"} and chosen.endings == {"other": {"done"}}
    found = window_moments(recent, chosen)
    assert {k.agent for k in found} == {"a", "b"}
    assert {k.subject for k in found if k.signal == "tool_share"} == {"t3", "t4"}


def test_ties_are_broken_by_name() -> None:
    rows = window(traces("b", 10), traces("a", 10), traces("c", 10))
    assert select(config(max_agents=2), [rows]).agents == {("shop", "a"), ("shop", "b")}
