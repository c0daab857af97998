"""Content in log events (ADK 2.13, EVENT_ONLY; and the legacy schema's Gemini `Content` log records): each tool step
carries the arguments and result the LLM calls recorded, the failing tool's `{"error": "... HTTP 503"}` result gives
error_free an `http_503` signature with the message in its template, tool_arguments_valid scores the calls, and the
handoff target is named. Expected values come from each scenario's expected.json (`tool_steps`)."""

from __future__ import annotations

import io
import json
from argparse import Namespace
from pathlib import Path

import pytest

from evaluators import load_traces
from evaluators.sdk import builtin
from evaluators.signatures import failure_signature, mask_message
from evaluators.traces import HandoffSpan, Trace
from monitor.commands import inspect_cmd
from tests.conftest import CORPUS

SCENARIOS = ("adk_native__events_multi_turn", "adk_native__events_multi_turn_legacy")
SCHEMA_2 = CORPUS / "adk_native__events_multi_turn"
FAILURE_TEXT = "FX rate service unavailable (HTTP 503)"


def _expected(name: str) -> dict:
    return json.loads((CORPUS / name / "expected.json").read_text())


def _inspect_json(path: Path) -> dict[str, dict]:
    out = io.StringIO()
    assert inspect_cmd.run(Namespace(paths=[str(path)], json=True, width=80), out) == 0
    return {view["trace_id"]: view for view in json.loads(out.getvalue())}


def _traces(name: str) -> dict[str, Trace]:
    return {trace.trace_id: trace for trace in load_traces([CORPUS / name])}


def _steps(trace: Trace) -> list[dict]:
    """Every tool and handoff step in start order, as expected.json's `tool_steps` lists them."""
    spans = sorted(
        [*trace.get_tool_calls(), *(s for s in trace.spans if isinstance(s, HandoffSpan))], key=lambda s: s.start_time
    )
    return [{"tool": s.name, "arguments": s.arguments, "result": s.result, "has_error": s.has_error} for s in spans]


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_tool_step_carries_its_arguments_and_result(name: str) -> None:
    expected = _expected(name)["tool_steps"]
    traces = _traces(name)
    assert sorted(traces) == sorted(expected)
    for trace_id, steps in expected.items():
        assert _steps(traces[trace_id]) == steps, trace_id


def test_inspect_json_shows_the_failing_tool_step_with_its_arguments_and_error_result() -> None:
    views = _inspect_json(SCHEMA_2)
    expected = _expected(SCHEMA_2.name)["tool_steps"]
    failing = 0
    for trace_id, steps in expected.items():
        tools = [s for s in steps if s["tool"] != "transfer_to_agent"]
        got = views[trace_id]["tool_calls"]
        assert [(t["tool"], t["arguments"], t["arguments_error"], t["result"]) for t in got] == [
            (s["tool"], s["arguments"], None, s["result"]) for s in tools
        ]
        for step in got:
            if step["status"] == "ERROR":
                failing += 1
                assert FAILURE_TEXT in json.dumps(step["result"])
                assert step["error"] == f"TOOL_ERROR: RuntimeError: {FAILURE_TEXT}"  # the marker, then the text
    assert failing == 2


def test_the_handoff_target_is_named() -> None:
    views = _inspect_json(SCHEMA_2)
    handoffs = [(h["from_agent"], h["to_agent"]) for v in views.values() for h in v["handoffs"]]
    assert handoffs == [("concierge_agent", "currency_agent")]


@pytest.mark.parametrize("name", SCENARIOS)
def test_error_free_signature_is_http_503_with_the_masked_message(name: str) -> None:
    failing = [t for t in _traces(name).values() if t.has_errors]
    assert len(failing) == 2
    for trace in failing:
        result = builtin("error_free").evaluate(trace)
        assert result.score == 0.0 and result.failure is not None
        signature = failure_signature("error_free", "trace", None, result.failure, result.explanation)
        assert (signature.step_kind, signature.step_name, signature.error_type) == (
            "tool",
            "convert_currency",
            "http_503",
        )
        assert signature.template == mask_message(FAILURE_TEXT)
        assert "FX rate service unavailable" in signature.template


@pytest.mark.parametrize("name", SCENARIOS)
def test_tool_arguments_valid_scores_every_agent_that_called_a_tool(name: str) -> None:
    checked = {}
    for trace in _traces(name).values():
        for agent in trace.agent_traces():
            result = builtin("tool_arguments_valid").evaluate(agent)
            assert result.skip_reason is None, (trace.trace_id, agent.agent_name, result.explanation)
            assert result.score == 1.0
            checked[agent.agent_name] = checked.get(agent.agent_name, 0) + result.details["checked"]
    # get_local_time + transfer_to_agent; convert_currency twice
    assert checked == {"concierge_agent": 2, "currency_agent": 2}


def test_offered_tools_keep_the_schemas_only_the_log_records_hold() -> None:
    """The generate_content spans write `parameters: null`; the details log records write the schema."""
    trace = next(iter(_traces(SCHEMA_2.name).values()))
    call = trace.get_llm_calls()[0]
    schemas = {tool.name: tool.parameters for tool in call.available_tools}
    assert schemas["get_local_time"] is not None
    assert schemas["get_local_time"]["required"] == ["city"]


def test_legacy_log_records_give_each_call_its_messages() -> None:
    """Schema 1 logs every history turn as a `gen_ai.user.message` holding a Gemini Content (role inside)."""
    traces = _traces("adk_native__events_multi_turn_legacy")
    first = traces["1d8922d7637e39aa71435cb7b1a302e8"].get_llm_calls()
    assert [m.role for m in first[1].messages] == ["system", "user", "assistant", "tool"]
    assert [c.name for c in first[0].tool_calls] == ["get_local_time"]
    assert first[1].messages[1].content == "What time is it in Tokyo right now?"
