"""OpenTelemetry GenAI semantic conventions: 1.37+ attributes, 1.28-1.36 events, 1.26 span events.

Always consulted last, as the fallback for any span carrying `gen_ai.*` data.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..jsonutil import as_float, as_str_list, as_text, parse_json
from ..messages import LLMOutput, Message, RetrievedDocument, ToolDefinition, is_placeholder
from ..records import SpanEvent, SpanRecord
from .base import Convention, Retrieval, SpanKind, TokenUsage, ToolInvocation, first_count, usage_from
from .parts import (
    content_text,
    gemini_content,
    gemini_output,
    make_tool_call,
    openai_message,
    openai_tool_calls,
    parse_parts_messages,
    parse_parts_output,
    parse_system_instructions,
    parse_tool_definitions,
)

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
LLM_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
HANDOFF_TOOL_TYPES = {"TransferToAgentTool"}
HANDOFF_TOOL_NAMES = {"transfer_to_agent"}
FRAMEWORK_PROVIDERS = {"strands-agents", "gcp.vertex.agent"}


def span_events(span: SpanRecord) -> list[SpanEvent]:
    """Span events, then joined log records, in time order within each."""
    return span.events + span.logs if span.logs else span.events


def details_events(span: SpanRecord) -> list[SpanEvent]:
    return [e for e in span_events(span) if e.name == DETAILS_EVENT]


def name_suffix(span: SpanRecord, prefix: str) -> str | None:
    if span.name.startswith(prefix) and len(span.name) > len(prefix):
        return span.name[len(prefix) :].strip() or None
    return None


# Usage detail keys: cache reads and writes are a part of input_tokens, reasoning of output_tokens (semconv 1.40/1.41;
# the google-genai instrumentation adds Gemini's thoughts to output_tokens). Then OpenLLMetry's own spellings: its
# >=0.55 spans carry no Traceloop marker, so this fallback reads them (`reasoning_tokens` beside the semconv names).
CACHE_READ_KEYS = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens")
CACHE_WRITE_KEYS = ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens")
REASONING_KEYS = ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens")


def usage_from_attributes(
    attrs: dict[str, Any],
    *,
    cache_read: tuple[str, ...] = CACHE_READ_KEYS,
    cache_write: tuple[str, ...] = CACHE_WRITE_KEYS,
    reasoning: tuple[str, ...] = REASONING_KEYS,
) -> TokenUsage | None:
    """`gen_ai.usage.*` (and the pre-1.27 prompt/completion names); a convention that spells the details its own
    way passes its keys, first match wins."""
    inp = first_count(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
    out = first_count(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
    total = first_count(attrs, "gen_ai.usage.total_tokens", "llm.usage.total_tokens")
    if inp is None and out is None:
        return None
    return usage_from(
        inp,
        out,
        total,
        cache_read=first_count(attrs, *cache_read),
        cache_write=first_count(attrs, *cache_write),
        reasoning=first_count(attrs, *reasoning),
    )


def log_usage(span: SpanRecord) -> TokenUsage | None:
    """Summed usage of the per-call details log records joined to this span (one record per real call)."""
    total: TokenUsage | None = None
    for event in details_events(span):
        usage = usage_from_attributes(event.attributes)
        if usage is not None:
            total = usage if total is None else total + usage
    return _cache_in_input(total, span.attributes)


def _cache_in_input(usage: TokenUsage | None, attrs: dict[str, Any]) -> TokenUsage | None:
    """OpenLIT writes the Anthropic API's own `input_tokens`, which leave the cache reads and writes out (OTel's
    input includes them; OpenInference and OpenLLMetry add them in): add them back, as every other reader has them.
    (The span says who wrote it; its log records do not.)"""
    if usage is None or attrs.get("telemetry.sdk.name") != "openlit":
        return usage
    if (attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system")) != "anthropic":
        return usage
    cached = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    usage.input_tokens += cached
    usage.total_tokens += cached
    return usage


class OTelGenAI(Convention):
    name = "otel_genai"

    def detect(self, span: SpanRecord) -> bool:
        return True

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        attrs = span.attributes
        op = attrs.get("gen_ai.operation.name")
        if op is not None and not isinstance(op, str):  # an array/kvlist value would be unhashable
            return None
        if op in LLM_OPERATIONS:
            return SpanKind.LLM
        if op == "execute_tool" or (op is None and span.name.startswith("execute_tool")):
            if self.handoff_target(span) is not None or _is_handoff_tool_type(attrs):
                return SpanKind.HANDOFF
            return SpanKind.TOOL
        if op == "invoke_agent" or (op is None and span.name.startswith("invoke_agent")):
            return SpanKind.AGENT
        # `create_agent` (AutoGen writes one per agent constructed) makes an agent, it does not run one: no agent
        # span, so an agent that never ran is no agent of the trace and agent-level results anchor on its run
        if op == "retrieval":
            return SpanKind.RETRIEVER
        if op == "embeddings":
            return SpanKind.EMBEDDING
        if op is not None:
            return SpanKind.OTHER
        if ("gen_ai.system" in attrs or "gen_ai.provider.name" in attrs) and "gen_ai.request.model" in attrs:
            return SpanKind.LLM
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        name = span.attributes.get("gen_ai.agent.name")
        if isinstance(name, str) and name:
            return name
        return name_suffix(span, "invoke_agent ")

    def agent_description(self, span: SpanRecord) -> str | None:
        value = span.attributes.get("gen_ai.agent.description")
        return value if isinstance(value, str) else None

    def model(self, span: SpanRecord) -> str | None:
        value = span.attributes.get("gen_ai.request.model") or span.attributes.get("gen_ai.response.model")
        return value if isinstance(value, str) else None

    def response_model(self, span: SpanRecord) -> str | None:
        value = span.attributes.get("gen_ai.response.model")
        return value if isinstance(value, str) else None

    def provider(self, span: SpanRecord) -> str | None:
        for key in ("gen_ai.provider.name", "gen_ai.system"):
            value = span.attributes.get(key)
            if isinstance(value, str) and value and value not in FRAMEWORK_PROVIDERS:
                return value
        return None

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        return _cache_in_input(usage_from_attributes(span.attributes), span.attributes)

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        attrs = span.attributes
        if "gen_ai.input.messages" in attrs:
            return _with_system(parse_parts_messages(attrs["gen_ai.input.messages"]), attrs)
        details = details_events(span)
        for event in details:
            if "gen_ai.input.messages" in event.attributes:
                return _with_system(parse_parts_messages(event.attributes["gen_ai.input.messages"]), event.attributes)
        messages = _messages_from_events(span)
        if messages:
            return messages
        for event in span.events:
            if event.name == "gen_ai.content.prompt":
                return _legacy_prompt(event.attributes.get("gen_ai.prompt"))
        if "gen_ai.system_instructions" in attrs:
            return _with_system([], attrs)
        return None

    def output(self, span: SpanRecord) -> LLMOutput | None:
        attrs = span.attributes
        reasons = as_str_list(attrs.get("gen_ai.response.finish_reasons")) or _singular_finish_reasons(attrs)
        if "gen_ai.output.messages" in attrs:
            return parse_parts_output(attrs["gen_ai.output.messages"], reasons)
        for event in reversed(details_events(span)):
            if "gen_ai.output.messages" in event.attributes:
                event_reasons = as_str_list(event.attributes.get("gen_ai.response.finish_reasons"))
                return parse_parts_output(event.attributes["gen_ai.output.messages"], event_reasons or reasons)
        choice = _choice_from_events(span, reasons)
        if choice is not None:
            return choice
        for event in span.events:
            if event.name == "gen_ai.content.completion":
                text = as_text(event.attributes.get("gen_ai.completion"))
                return LLMOutput(text=_legacy_completion_text(text), finish_reasons=reasons)
        return LLMOutput(finish_reasons=reasons) if reasons else None

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        own = None
        if "gen_ai.tool.definitions" in span.attributes:
            own = parse_tool_definitions(span.attributes["gen_ai.tool.definitions"])
            if not own or all(tool.parameters is not None for tool in own):
                return own
        for event in details_events(span):
            if "gen_ai.tool.definitions" in event.attributes:
                logged = parse_tool_definitions(event.attributes["gen_ai.tool.definitions"])
                return _fill_parameters(own, logged) if own else logged
        return own

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        attrs = span.attributes
        name = attrs.get("gen_ai.tool.name") or name_suffix(span, "execute_tool ")
        if not name and "gen_ai.tool.call.arguments" not in attrs:
            return None
        call_id = attrs.get("gen_ai.tool.call.id")
        if call_id == "<not specified>":
            call_id = None
        return ToolInvocation(
            name=str(name) if name else None,
            call_id=call_id if isinstance(call_id, str) else None,
            arguments=attrs.get("gen_ai.tool.call.arguments"),
            result=attrs.get("gen_ai.tool.call.result"),
            description=attrs.get("gen_ai.tool.description"),
        )

    def handoff_target(self, span: SpanRecord) -> str | None:
        attrs = span.attributes
        name = attrs.get("gen_ai.tool.name") or name_suffix(span, "execute_tool ")
        if not (isinstance(name, str) and name in HANDOFF_TOOL_NAMES) and not _is_handoff_tool_type(attrs):
            return None
        args = parse_json(attrs.get("gen_ai.tool.call.arguments"))
        target = args.get("agent_name") if isinstance(args, dict) else None
        return str(target) if target else ""

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        attrs = span.attributes
        if "gen_ai.retrieval.documents" not in attrs and "gen_ai.retrieval.query.text" not in attrs:
            return None
        docs = []
        raw = parse_json(attrs.get("gen_ai.retrieval.documents"))
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, dict):
                metadata = {k: v for k, v in item.items() if k not in ("id", "score", "content", "text")}
                docs.append(
                    RetrievedDocument(
                        id=as_text(item.get("id")),
                        content=as_text(item.get("content") or item.get("text")),
                        score=as_float(item.get("score")),
                        metadata=metadata or None,
                    )
                )
        return Retrieval(query=as_text(attrs.get("gen_ai.retrieval.query.text")), documents=docs)

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        attrs = span.attributes
        if "gen_ai.input.messages" not in attrs and "gen_ai.output.messages" not in attrs:
            return None
        messages = parse_parts_messages(attrs.get("gen_ai.input.messages")) or []
        output = parse_parts_output(attrs.get("gen_ai.output.messages"))
        # the latest: an invoke_agent holding the whole conversation resends turn 1's question first
        user = next((m.content for m in reversed(messages) if m.role == "user" and m.content), None)
        return user, output.text if output else None


def _singular_finish_reasons(attrs: dict[str, Any]) -> list[str]:
    """Semantic Kernel's `gen_ai.response.finish_reason`: its enum's str, comma-joined ("FinishReason.TOOL_CALLS")."""
    value = attrs.get("gen_ai.response.finish_reason")
    if not isinstance(value, str):
        return []
    return [r.strip().rpartition(".")[2].lower() for r in value.split(",") if r.strip().rpartition(".")[2]]


def _is_handoff_tool_type(attrs: dict[str, Any]) -> bool:
    tool_type = attrs.get("gen_ai.tool.type")
    return isinstance(tool_type, str) and tool_type in HANDOFF_TOOL_TYPES


def _with_system(messages: list[Message] | None, attrs: dict[str, Any]) -> list[Message] | None:
    system = parse_system_instructions(attrs.get("gen_ai.system_instructions"))
    if system is None:
        return messages
    if messages and messages[0].role == "system" and messages[0].content == system.content:
        return messages  # OpenLIT writes the system prompt both ways: once is the prompt as sent
    return [system, *(messages or [])]


def _event_body(event: SpanEvent) -> dict:
    body = parse_json(event.body)
    if isinstance(body, dict):
        return body
    # Some SDKs put the fields in the event attributes instead of the body.
    return {k: parse_json(v) for k, v in event.attributes.items()}


def _messages_from_events(span: SpanRecord) -> list[Message]:
    """OTel 1.28-1.36 per-message events (log records or span events)."""
    messages: list[Message] = []
    for event in span_events(span):
        role = _MESSAGE_EVENTS.get(event.name)
        if role is None:
            continue
        body = _event_body(event)
        gemini = body.get("content")
        if isinstance(gemini, dict) and _is_gemini_content(gemini):  # ADK schema 1: a whole Gemini Content
            messages.extend(gemini_content({**gemini, "role": gemini.get("role") or role}))  # its role inside
            continue
        content = None if is_placeholder(body.get("content")) else body.get("content")
        if content is None and not body.get("tool_calls"):
            continue  # content not captured ("<elided>"): the event says nothing
        # the semconv names the tool message's call id `id`; Semantic Kernel's body is the message, `tool_call_id`
        call_id = body.get("id") or body.get("tool_call_id")
        item = {"role": role, "content": content, "tool_calls": body.get("tool_calls"), "tool_call_id": call_id}
        messages.append(openai_message(item))
    return messages


def _fill_parameters(own: list[ToolDefinition], logged: list[ToolDefinition] | None) -> list[ToolDefinition]:
    """The span's definitions, with the schemas it left out (ADK with content in events writes `parameters: null` on
    the span) taken from the details event's definitions of the same name."""
    schemas = {tool.name: tool.parameters for tool in logged or [] if tool.parameters is not None}
    return [
        tool
        if tool.parameters is not None or tool.name not in schemas
        else replace(tool, parameters=schemas[tool.name])
        for tool in own
    ]


def _is_gemini_content(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("parts"), list)


def _choice_from_events(span: SpanRecord, reasons: list[str]) -> LLMOutput | None:
    texts, calls, event_reasons = [], [], []
    found = False
    for event in span_events(span):
        if event.name != "gen_ai.choice":
            continue
        found = True
        body = _event_body(event)
        message = given if isinstance(given := body.get("message"), dict) else {}
        if not message and _is_gemini_content(body.get("content")):  # ADK schema 1: a Gemini Content
            gemini = gemini_output({"content": body["content"]})
            texts.extend([gemini.text] if gemini and gemini.text else [])
            calls.extend(gemini.tool_calls if gemini else [])
            if isinstance(body.get("finish_reason"), str):
                event_reasons.append(body["finish_reason"].lower())
            continue
        text = content_text(message.get("content"))
        if text and not is_placeholder(text):
            texts.append(text)
        calls.extend(openai_tool_calls(body.get("tool_calls") or message.get("tool_calls")))
        if isinstance(body.get("finish_reason"), str):
            event_reasons.append(body["finish_reason"])
    if not found:
        return None
    return LLMOutput(text="\n".join(texts) or None, tool_calls=calls, finish_reasons=reasons or event_reasons)


def _legacy_prompt(value: Any) -> list[Message]:
    parsed = parse_json(value)
    if isinstance(parsed, list):
        return [openai_message(m) for m in parsed if isinstance(m, dict)]
    text = as_text(value)
    return [openai_message({"role": "user", "content": text})] if text else []


def _legacy_completion_text(text: str | None) -> str | None:
    parsed = parse_json(text)
    if isinstance(parsed, list):
        texts = [content_text(m.get("content")) for m in parsed if isinstance(m, dict)]
        return "\n".join(t for t in texts if t) or None
    return text


__all__ = [
    "CACHE_READ_KEYS",
    "CACHE_WRITE_KEYS",
    "DETAILS_EVENT",
    "REASONING_KEYS",
    "OTelGenAI",
    "log_usage",
    "make_tool_call",
    "usage_from_attributes",
]
