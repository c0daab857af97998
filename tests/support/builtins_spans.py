"""OTel GenAI spans for the rule-builtin tests: `chat`, `tool`, `agent` SpanRecords and `tools_json`."""

from __future__ import annotations

import json
from typing import Any

from evaluators.traces.records import SpanRecord
from tests.support.spanfactory import make_span, next_start

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def tools_json(*tools: dict[str, Any]) -> str:
    return json.dumps(list(tools))


def chat(
    text: str | None = None,
    tool_calls: list[tuple[str, Any]] | None = None,
    *,
    tools: list[dict[str, Any]] | None = None,
    finish: str | None = "stop",
    model: str = "gpt-4o",
    input_tokens: int | None = 100,
    output_tokens: int | None = 20,
    parent: SpanRecord | str | None = None,
    start: int | None = None,
    end: int | None = None,
    **extra: Any,
) -> SpanRecord:
    """One chat span: its answer text, requested (name, arguments) tool calls, offered tools and usage."""
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"type": "text", "content": text})
    for index, (name, arguments) in enumerate(tool_calls or []):
        parts.append({"type": "tool_call", "id": f"call_{index}", "name": name, "arguments": arguments})
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish is not None:
        message["finish_reason"] = finish
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.provider.name": "openai",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
        "gen_ai.output.messages": json.dumps([message]),
    }
    if input_tokens is not None:
        attrs["gen_ai.usage.input_tokens"] = input_tokens
    if output_tokens is not None:
        attrs["gen_ai.usage.output_tokens"] = output_tokens
    if tools is not None:
        attrs["gen_ai.tool.definitions"] = tools_json(*tools)
    attrs.update(extra)
    return make_span(f"chat {model}", attrs, kind=3, parent=parent, start=start, end=end)


def tool(
    name: str, arguments: Any = None, *, error: str | None = None, parent: SpanRecord | str | None = None
) -> SpanRecord:
    """One execute_tool span; `error` makes it fail (status 2 with that message)."""
    attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if arguments is not None:
        attrs["gen_ai.tool.call.arguments"] = json.dumps(arguments)
    return make_span(f"execute_tool {name}", attrs, parent=parent, status=2 if error else 0, status_message=error or "")


def agent(name: str, *, parent: SpanRecord | str | None = None) -> SpanRecord:
    """One invoke_agent span lasting 5 s (long enough to cover the steps made after it)."""
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    start = next_start()
    return make_span(f"invoke_agent {name}", attrs, parent=parent, start=start, end=start + 5 * 10**9)
