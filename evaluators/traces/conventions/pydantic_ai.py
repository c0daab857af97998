"""Pydantic AI: `chat {model}`, `execute_tool {tool}` / `running tool`, `invoke_agent {agent}` / `agent run`.

Format v2+ content uses the OTel parts shape (the fallback reads it), except that PAI writes tool
results as `tool_call_response` parts keyed `result` (not `response`), with role `user` before
format v6. Format v1 put the messages in an `events` attribute. Agent spans carry the whole run
(`pydantic_ai.all_messages`, `final_result`) and the run's usage (`gen_ai.aggregated_usage.*`, or
`gen_ai.usage.*` when aggregated names are off): no facet here reads it, and agent spans are never
LLM calls, so it is never counted.
"""

from __future__ import annotations

from typing import Any

from ..jsonutil import as_int, as_text, parse_json
from ..messages import LLMOutput, Message, ToolCall, ToolDefinition
from ..records import SpanRecord
from .base import Convention, SpanKind, TokenUsage, ToolInvocation
from .otel_genai import CACHE_READ_KEYS, CACHE_WRITE_KEYS, REASONING_KEYS, usage_from_attributes
from .parts import (
    content_text,
    openai_message,
    openai_tool_calls,
    parse_parts_messages,
    parse_system_instructions,
    parse_tool_definitions,
)

SCOPE = "pydantic-ai"
# `RequestUsage` details go to `gen_ai.usage.details.{key}`: cache reads / writes (parts of input_tokens, which
# PAI sums them into for every provider) and OpenAI's `reasoning_tokens` (a part of output_tokens).
CACHE_READ = ("gen_ai.usage.details.cache_read_tokens", *CACHE_READ_KEYS)
CACHE_WRITE = ("gen_ai.usage.details.cache_write_tokens", *CACHE_WRITE_KEYS)
REASONING = ("gen_ai.usage.details.reasoning_tokens", *REASONING_KEYS)
MARKERS = ("logfire.msg", "pydantic_ai.all_messages", "final_result", "model_request_parameters", "agent_name")
AGENT_MARKERS = ("pydantic_ai.all_messages", "all_messages_events", "final_result")
V1_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def is_agent_span(span: SpanRecord) -> bool:
    if span.name == "agent run" or span.name.startswith("invoke_agent"):
        return True
    return any(key in span.attributes for key in AGENT_MARKERS)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class PydanticAI(Convention):
    name = "pydantic_ai"

    def detect(self, span: SpanRecord) -> bool:
        if span.scope_name == SCOPE:
            return True
        return not span.attributes.keys().isdisjoint(MARKERS)

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        name = span.name
        if name == "agent run" or name.startswith("invoke_agent"):
            return SpanKind.AGENT
        if name == "running tool":
            return SpanKind.TOOL
        if name.startswith("running output function"):
            return SpanKind.OTHER
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        if not is_agent_span(span):
            return None
        attrs = span.attributes
        return _str(attrs.get("gen_ai.agent.name")) or _str(attrs.get("agent_name"))

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        """A `chat` span's `gen_ai.usage.*` with PAI's details; agent spans' run totals are never read."""
        if is_agent_span(span):
            return None
        return usage_from_attributes(
            span.attributes, cache_read=CACHE_READ, cache_write=CACHE_WRITE, reasoning=REASONING
        )

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        attrs = span.attributes
        if "gen_ai.input.messages" in attrs:
            messages = parse_parts_messages(attrs["gen_ai.input.messages"])
            system = parse_system_instructions(attrs.get("gen_ai.system_instructions"))
            return messages if system is None else [system, *(messages or [])]
        events = _v1_events(attrs.get("events"))
        if events is None:
            return None
        return [_v1_message(e) for e in events if e.get("event.name") in V1_EVENTS]

    def output(self, span: SpanRecord) -> LLMOutput | None:
        events = _v1_events(span.attributes.get("events"))
        if events is None:
            return None
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasons: list[str] = []
        found = False
        for event in events:
            if event.get("event.name") != "gen_ai.choice":
                continue
            found = True
            message = given if isinstance(given := event.get("message"), dict) else {}
            text = content_text(message.get("content"))
            if text:
                texts.append(text)
            calls.extend(openai_tool_calls(message.get("tool_calls")))
            if isinstance(event.get("finish_reason"), str):
                reasons.append(event["finish_reason"])
        if not found:
            return None
        return LLMOutput(text="\n".join(texts) or None, tool_calls=calls, finish_reasons=reasons)

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        attrs = span.attributes
        if "gen_ai.tool.definitions" in attrs:
            return None  # the OTel fallback reads it
        params = parse_json(attrs.get("model_request_parameters"))
        if not isinstance(params, dict):
            return None
        tools = [
            *(params.get("function_tools") or []),
            *(params.get("output_tools") or []),
        ]
        return parse_tool_definitions(tools) if tools else None

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        attrs = span.attributes
        if "tool_arguments" not in attrs and "tool_response" not in attrs and span.name != "running tool":
            return None
        call_id = attrs.get("gen_ai.tool.call.id")
        return ToolInvocation(
            name=_str(attrs.get("gen_ai.tool.name")),
            call_id=_str(call_id),
            arguments=attrs.get("tool_arguments", attrs.get("gen_ai.tool.call.arguments")),
            result=attrs.get("tool_response", attrs.get("gen_ai.tool.call.result")),
        )

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        attrs = span.attributes
        if not any(key in attrs for key in AGENT_MARKERS):
            return None
        messages, new_messages = _run_messages(attrs)
        request = _latest_user_text(new_messages) or _latest_user_text(messages)  # this turn's, not turn 1's
        answer = attrs.get("final_result")
        if answer is None:
            answer = next((m.content for m in reversed(messages) if m.role == "assistant" and m.content), None)
        return request, answer


def _run_messages(attrs: dict[str, Any]) -> tuple[list[Message], list[Message]]:
    """All messages of an agent run, and those added by this run (after `new_message_index`)."""
    if "pydantic_ai.all_messages" in attrs:
        raw = parse_json(attrs["pydantic_ai.all_messages"])
        start = as_int(attrs.get("pydantic_ai.new_message_index")) or 0
        messages = parse_parts_messages(raw) or []
        if isinstance(raw, list) and 0 < start < len(raw):
            return messages, parse_parts_messages(raw[start:]) or []
        return messages, messages
    events = _v1_events(attrs.get("all_messages_events")) or []
    messages = [_v1_message(e) for e in events if e.get("event.name") in V1_EVENTS]
    return messages, messages


def _latest_user_text(messages: list[Message]) -> str | None:
    return next((m.content for m in reversed(messages) if m.role == "user" and m.content), None)


def _v1_events(value: Any) -> list[dict] | None:
    parsed = parse_json(value)
    if not isinstance(parsed, list):
        return None
    return [e for e in parsed if isinstance(e, dict)]


def _v1_message(event: dict) -> Message:
    role = V1_EVENTS.get(str(event.get("event.name")), event.get("role"))
    item = {
        "role": role,
        "content": event.get("content"),
        "tool_calls": event.get("tool_calls"),
        "tool_call_id": as_text(event.get("id")) if event.get("id") is not None else None,
        "name": event.get("name"),
    }
    return openai_message(item)
