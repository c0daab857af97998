"""A trace's time window is read in one pass over its spans (for its metrics, and then a session's turn): it must
give what the separate readings gave (earliest start > 0, latest end, the duration between them)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.spanfactory import make_span, trace_of

_times = st.one_of(st.just(0), st.integers(-3, 3), st.integers(1, 10**12))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_times, _times), min_size=1, max_size=6))
def test_window_as_the_separate_readings(times: list[tuple[int, int]]) -> None:
    root = make_span("root", start=times[0][0], end=times[0][1])
    trace = trace_of(root, *(make_span(f"s{i}", parent=root, start=s, end=e) for i, (s, e) in enumerate(times[1:])))
    starts = [s.start_time for s in trace.spans if s.start_time > 0]
    ends = [s.end_time for s in trace.spans if s.end_time > 0]
    assert trace.start_time == (min(starts) if starts else 0)
    assert trace.end_time == max((s.end_time for s in trace.spans), default=0)
    duration = 0.0 if not starts or not ends or max(ends) < min(starts) else (max(ends) - min(starts)) / 1e6
    assert trace.metrics.total_duration_ms == pytest.approx(duration)


def test_agent_names_are_a_fresh_list_each_time() -> None:
    root = make_span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    trace = trace_of(root)
    names = trace.agent_names
    names.append("changed")
    assert trace.agent_names == ["a"] and trace.metrics.agent_count == 1
