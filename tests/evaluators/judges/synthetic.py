"""A small synthetic agent trace (OTel GenAI spans) for judge tests: every text it carries is chosen."""

from __future__ import annotations

import json
from typing import Any

from evaluators.traces import Trace
from evaluators.traces.records import SpanRecord
from tests.support.spanfactory import make_span, next_start, trace_of

MS = 1_000_000


def _messages(*messages: tuple[str, list[dict[str, Any]]]) -> str:
    return json.dumps([{"role": role, "parts": parts} for role, parts in messages])


def _text(content: str) -> list[dict[str, Any]]:
    return [{"type": "text", "content": content}]


def _chat(parent: SpanRecord, system: str | None, inputs: str, output: list[dict[str, Any]], start: int) -> SpanRecord:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": inputs,
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": output, "finish_reason": "stop"}]),
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
    }
    if system is not None:
        attrs["gen_ai.system_instructions"] = json.dumps(_text(system))
    return make_span("chat gpt-4o", attrs, kind=3, parent=parent, start=start, end=start + MS)


def agent_trace(
    *,
    question: str = "What is the capital of France?",
    system: str | None = "You answer geography questions. Use the lookup tool.",
    tool_result: str | None = "Paris is the capital of France.",
    tool_error: str | None = None,
    answer: str | None = "The capital of France is Paris.",
    documents: list[str] | None = None,
    query: str = "capital of France",
    agent: str = "geo_agent",
) -> Trace:
    """An agent that calls `lookup` once (optionally after a retrieval), then answers."""
    start = next_start()
    root_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.input.messages": _messages(("user", _text(question))),
    }
    if answer is not None:
        root_attrs["gen_ai.output.messages"] = _messages(("assistant", _text(answer)))
    root = make_span(f"invoke_agent {agent}", root_attrs, start=start, end=start + 100 * MS)
    spans = [root]
    at = start + MS
    if documents is not None:
        docs = [{"id": f"doc-{i}", "score": 0.9 - i / 10, "content": text} for i, text in enumerate(documents)]
        retrieval = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": query,
            "gen_ai.retrieval.documents": json.dumps(docs),
        }
        spans.append(make_span("retrieval docs", retrieval, kind=3, parent=root, start=at, end=at + MS))
        at += 2 * MS
    call = {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"q": query}}
    spans.append(_chat(root, system, _messages(("user", _text(question))), [call], at))
    at += 2 * MS
    tool_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": json.dumps({"q": query}),
    }
    if tool_result is not None:
        tool_attrs["gen_ai.tool.call.result"] = tool_result
    spans.append(
        make_span(
            "execute_tool lookup",
            tool_attrs,
            parent=root,
            start=at,
            end=at + MS,
            status=2 if tool_error else 0,
            status_message=tool_error or "",
        )
    )
    at += 2 * MS
    if answer is not None:
        history = _messages(
            ("user", _text(question)),
            ("assistant", [call]),
            ("tool", [{"type": "tool_call_response", "id": "call_1", "response": tool_result or tool_error}]),
        )
        spans.append(_chat(root, system, history, _text(answer), at))
    return trace_of(*spans)
