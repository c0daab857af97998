"""detail_row_of: the step tree `inspect` shows, bounded, with the trace's agents, models, tools and errors."""

from __future__ import annotations

import re

from evaluators import load_traces
from evaluators.sdk import builtin
from monitor.commands.inspect_cmd import render_tree
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.outcomes import MASK_MARGIN
from monitor.store.trace_detail import STEP_TEXT, detail_row_of
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of
from tests.support.store_builders import agent_trace

LABEL_KIND = {"agent": "agent", "llm": "llm", "tool": "tool", "retrieval": "retrieval", "handoff": "handoff"}


def inspected(trace: object) -> list[tuple[int, str]]:
    """(depth, kind) of each line of `inspect`'s tree."""
    rows = []
    for line in render_tree(trace).splitlines():  # type: ignore[arg-type]
        match = re.match(r"^  ((?:   )*)└─ (\S+)", line)
        if match:
            word = match[2]
            kind = "span" if "(wraps the call below)" in line else LABEL_KIND.get(word, "span")
            rows.append((len(match[1]) // 3, kind))
    return rows


def test_the_steps_are_the_tree_inspect_shows_for_every_recorded_trace() -> None:
    checked = set()
    for scenario in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        for trace in load_traces([scenario]):
            detail = detail_row_of(trace)
            assert [(s[2], s[3]) for s in detail.steps] == inspected(trace), scenario.name
            ids = {s[0] for s in detail.steps}
            assert all(s[1] in ids for s in detail.steps if s[1] is not None)  # parents are steps
            assert all((s[1] is None) == (s[2] == 0) for s in detail.steps)
            checked.update(s[3] for s in detail.steps)
    assert checked == {"agent", "llm", "tool", "handoff", "retrieval", "span"}


def test_agents_models_tools_and_errors_of_a_trace() -> None:
    trace = agent_trace()
    detail = detail_row_of(trace)
    assert detail.agents == ("planner",)
    assert [m[:4] for m in detail.models] == [("gpt-4o", 1, 100, 10), ("gpt-4o-mini", 1, 200, 20)]  # then spend
    assert detail.tools == ("search", "calc")
    calc = next(s for s in detail.steps if s[4] == "calc")
    assert detail.errors == ((calc[0], "calc", "tool", "division by zero"),)
    retrieval = detail.steps[1]
    assert (retrieval[3], retrieval[11]) == ("retrieval", "where to go?")
    assert [s[5] for s in detail.steps] == sorted(s[5] for s in detail.steps) and detail.steps[0][5] == 0.0


def test_the_steps_stop_at_the_cap_and_say_so() -> None:
    trace = agent_trace()
    detail = detail_row_of(trace, max_steps=3)
    assert [s[3] for s in detail.steps] == ["agent", "retrieval", "llm"] and detail.steps_truncated
    assert detail.errors[0][1] == "calc"  # error spans are listed past the cap
    assert not detail_row_of(trace).steps_truncated
    assert detail_row_of(trace, max_steps=0).steps == ()


def test_step_text_is_bounded() -> None:
    root = make_span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    tool = make_span(
        "execute_tool t",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.arguments": "x" * 9000,
         "gen_ai.tool.call.result": "y" * 9000},
        parent=root,
        status=2,
        status_message="e" * 9000,
    )  # fmt: skip
    (_, step) = detail_row_of(trace_of(root, tool)).steps
    assert len(step[11]) <= STEP_TEXT + 2 * MASK_MARGIN + 3 and step[11].count("x") < 400
    assert len(step[7]) == STEP_TEXT + MASK_MARGIN  # cut to the stored size once masked (packing)


def test_the_detail_is_built_only_for_traces_the_store_keeps() -> None:
    trace = agent_trace()
    assert TraceEvaluator([], store_results="all").outcome(trace).detail is not None
    assert TraceEvaluator([], store_results=None).outcome(trace).detail is None
    assert TraceEvaluator([], store_results="failing").outcome(trace).detail is None  # nothing failed
    failing = [ConfiguredEvaluator(builtin("tool_success_rate"), "tool_success_rate")]  # calc failed
    assert TraceEvaluator(failing, store_results="failing").outcome(trace).detail is not None
