"""Strands Agents: `invoke_agent {agent}` → `execute_event_loop_cycle` → `chat` / `execute_tool {tool}`.

Content is in span EVENTS. Default mode: one event per message (`gen_ai.{role}.message`, or
`gen_ai.tool.message` when the content holds a `toolResult`) with attribute `content` = JSON of
Bedrock-Converse content blocks, and a `gen_ai.choice` event (`message`, `finish_reason`).
Latest mode (`gen_ai_latest_experimental`): `gen_ai.client.inference.operation.details` events
in the OTel parts shape, with tool results' `response` still a list of content blocks.
`gen_ai.system` / `gen_ai.provider.name` is `strands-agents`, never the model vendor.
"""

from __future__ import annotations

from typing import Any

from ..jsonutil import as_str_list, as_text, parse_json
from ..messages import (
    AssistantMessage,
    LLMOutput,
    Message,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    make_message,
)
from ..records import SpanEvent, SpanRecord
from .base import Convention, SpanKind, TokenUsage, ToolInvocation
from .otel_genai import CACHE_WRITE_KEYS, DETAILS_EVENT, span_events, usage_from_attributes
from .parts import make_tool_call, object_schema, parse_parts_messages, parse_parts_output

FRAMEWORK = "strands-agents"
SCOPE = "strands.telemetry.tracer"
CYCLE_SPAN = "execute_event_loop_cycle"
# Strands writes the Bedrock-style names beside the semconv ones; the counts are the model provider's own (Bedrock
# counts cache tokens apart from inputTokens, OpenAI inside prompt tokens). No reasoning count is written.
CACHE_WRITE = (*CACHE_WRITE_KEYS, "gen_ai.usage.cache_write_input_tokens")
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


class Strands(Convention):
    name = "strands"

    def detect(self, span: SpanRecord) -> bool:
        attrs = span.attributes
        if span.name == CYCLE_SPAN or span.scope_name == SCOPE or "gen_ai.agent.tools" in attrs:
            return True
        return FRAMEWORK in (attrs.get("gen_ai.system"), attrs.get("gen_ai.provider.name"))

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        return SpanKind.OTHER if span.name == CYCLE_SPAN else None

    # provider: left to the OTel fallback, which ignores `strands-agents` (the framework).

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        return usage_from_attributes(span.attributes, cache_write=CACHE_WRITE)

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        latest = _details(span, "gen_ai.input.messages")
        if latest is not None:
            return parse_parts_messages(_normalize_parts(latest))
        messages: list[Message] = []
        found = False
        for event in span_events(span):
            role = MESSAGE_EVENTS.get(event.name)
            if role is None:
                continue
            found = True
            messages.extend(_blocks_messages(role, parse_json(event.attributes.get("content"))))
        return messages if found else None

    def output(self, span: SpanRecord) -> LLMOutput | None:
        latest = _details(span, "gen_ai.output.messages", last=True)
        if latest is not None:
            return parse_parts_output(_normalize_parts(latest))
        choice = _choice(span)
        if choice is None:
            return None
        texts, calls = _blocks_content(_message_blocks(choice.attributes.get("message")))
        reasons = as_str_list(choice.attributes.get("finish_reason"))
        return LLMOutput(text="\n".join(texts) or None, tool_calls=calls, finish_reasons=reasons)

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        attrs = span.attributes
        if "gen_ai.tool.definitions" in attrs or "gen_ai.agent.tools" not in attrs:
            return None  # richer definitions (opt-in) are read by the OTel fallback
        names = parse_json(attrs["gen_ai.agent.tools"])
        if isinstance(names, str):
            names = [names]
        tools = []
        for item in names if isinstance(names, list) else []:
            name = item.get("name") if isinstance(item, dict) else item
            if isinstance(name, str) and name:
                tools.append(ToolDefinition(name=name))
        return tools

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        attrs = span.attributes
        if not span.name.startswith("execute_tool") and attrs.get("gen_ai.operation.name") != "execute_tool":
            return None
        arguments, result, call_id = _tool_content(span)
        if "gen_ai.tool.call.arguments" in attrs:
            arguments = attrs["gen_ai.tool.call.arguments"]
        if "gen_ai.tool.call.result" in attrs:
            result = _blocks_value(parse_json(attrs["gen_ai.tool.call.result"]))
        if arguments is None and result is None:
            return None  # nothing beyond what the OTel fallback reads
        name = attrs.get("gen_ai.tool.name")
        own_id = attrs.get("gen_ai.tool.call.id")
        return ToolInvocation(
            name=name if isinstance(name, str) and name else span.name.removeprefix("execute_tool ").strip() or None,
            call_id=own_id if isinstance(own_id, str) and own_id else call_id,
            arguments=arguments,
            result=result,
            parameters=object_schema(attrs.get("gen_ai.tool.json_schema")),
        )

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        op = span.attributes.get("gen_ai.operation.name")
        if not (isinstance(op, str) and op.startswith("invoke_")) and not span.name.startswith("invoke_"):
            return None
        messages = self.input_messages(span) or []
        request = next((m.content for m in reversed(messages) if m.role == "user" and m.content), None)
        output = self.output(span)
        answer = output.text if output else None
        if request is None and answer is None:
            return None
        return request, answer


def _details(span: SpanRecord, key: str, *, last: bool = False) -> Any:
    """A latest-mode value: a span attribute (`gen_ai_span_attributes_only`) or a details event's."""
    if key in span.attributes:
        return span.attributes[key]
    events = [e for e in span_events(span) if e.name == DETAILS_EVENT and key in e.attributes]
    if not events:
        return None
    return (events[-1] if last else events[0]).attributes[key]


def _choice(span: SpanRecord) -> SpanEvent | None:
    choices = [e for e in span_events(span) if e.name == "gen_ai.choice"]
    return choices[-1] if choices else None


def _message_blocks(raw: Any) -> Any:
    """A `message` attribute: JSON content blocks, or plain text (the agent span's final answer)."""
    parsed = parse_json(raw)
    if isinstance(parsed, list) or not isinstance(raw, str):
        return parsed
    return raw


def _blocks(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [value]
    if isinstance(value, str) and value:
        return [{"text": value}]  # plain text (the agent span's final answer) or unparsable JSON
    return []


def _blocks_content(value: Any) -> tuple[list[str], list[ToolCall]]:
    """Texts and tool calls from Bedrock-Converse content blocks."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in _blocks(value):
        if not isinstance(block, dict):
            continue
        use = block.get("toolUse")
        if isinstance(use, dict):
            calls.append(make_tool_call(use.get("name"), use.get("input"), use.get("toolUseId")))
        elif isinstance(block.get("text"), str) and block["text"]:
            texts.append(block["text"])
    return texts, calls


def _blocks_value(value: Any) -> Any:
    """A tool result's content blocks as a value: one JSON block → its value, else the joined text."""
    if not isinstance(value, list):
        return value
    jsons = [b["json"] for b in value if isinstance(b, dict) and "json" in b]
    if len(jsons) == 1 and len(value) == 1:
        return jsons[0]
    texts = [b["text"] for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
    texts += [as_text(j) or "" for j in jsons]
    return "\n".join(texts) if texts else as_text(value)


def _blocks_messages(role: str, value: Any) -> list[Message]:
    """One message event's content blocks; every `toolResult` block becomes a ToolMessage."""
    results: list[Message] = []
    for block in _blocks(value):
        result = block.get("toolResult") if isinstance(block, dict) else None
        if isinstance(result, dict):
            call_id = result.get("toolUseId")
            results.append(
                ToolMessage(
                    content=as_text(_blocks_value(result.get("content"))) or "",
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            )
    texts, calls = _blocks_content(value)
    text = "\n".join(texts)
    if results:
        head: list[Message] = [make_message(role, text)] if text and role != "tool" else []
        return head + results
    if role == "assistant":
        return [AssistantMessage(content=text, tool_calls=calls)]
    if role == "tool":
        return [ToolMessage(content=text)]
    return [make_message(role, text)]


def _normalize_parts(value: Any) -> Any:
    """Latest mode keeps Strands' content blocks in `tool_call_response.response`: make them text."""
    parsed = parse_json(value)
    if not isinstance(parsed, list):
        return value
    for message in parsed:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call_response":
                part["response"] = _blocks_value(part.get("response"))
    return parsed


def _tool_content(span: SpanRecord) -> tuple[Any, Any, str | None]:
    """(arguments, result, call id) from a tool span's events, legacy or latest mode."""
    arguments = result = None
    call_id: str | None = None
    for event in span_events(span):
        attrs = event.attributes
        if event.name == "gen_ai.tool.message":
            arguments = attrs.get("content")
            call_id = as_text(attrs.get("id")) or call_id
        elif event.name == "gen_ai.choice":
            result = _blocks_value(parse_json(attrs.get("message")))
        elif event.name == DETAILS_EVENT:
            for part in _parts(attrs.get("gen_ai.input.messages")):
                if part.get("type") == "tool_call":
                    arguments = part.get("arguments")
                    call_id = as_text(part.get("id")) or call_id
            for part in _parts(attrs.get("gen_ai.output.messages")):
                if part.get("type") == "tool_call_response":
                    result = _blocks_value(part.get("response"))
    return arguments, result, call_id


def _parts(value: Any) -> list[dict]:
    parsed = parse_json(value)
    parts: list[dict] = []
    for message in parsed if isinstance(parsed, list) else []:
        items = message.get("parts") if isinstance(message, dict) else None
        parts.extend(p for p in (items if isinstance(items, list) else []) if isinstance(p, dict))
    return parts
