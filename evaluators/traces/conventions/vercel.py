"""Vercel AI SDK (`ai.*` attributes): outer `ai.generateText` etc., per-call do* spans, `ai.toolCall`.

Only the do* spans are LLM calls: the outer span repeats their usage and text, so it is OTHER
(never counted) but carries the request and answer (`io`). v3 spelled the result attributes
`ai.result.*` and the finish reason `ai.finishReason`; v4 used `args` / `result` in tool parts.
"""

from __future__ import annotations

from typing import Any

from ..jsonutil import as_int, as_str_list, as_text, parse_json
from ..messages import (
    AssistantMessage,
    LLMOutput,
    Message,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    make_message,
    normalize_role,
)
from ..records import SpanRecord
from .base import Convention, SpanKind, TokenUsage, ToolInvocation, first_count, usage_from
from .parts import make_tool_call, parse_tool_definitions

LLM_OPERATIONS = {
    "ai.generateText.doGenerate",
    "ai.streamText.doStream",
    "ai.generateObject.doGenerate",
    "ai.streamObject.doStream",
}
OUTER_OPERATIONS = {"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"}
EMBED_OPERATIONS = {"ai.embed", "ai.embed.doEmbed", "ai.embedMany", "ai.embedMany.doEmbed"}
TOOL_OPERATION = "ai.toolCall"
KNOWN_OPERATIONS = LLM_OPERATIONS | OUTER_OPERATIONS | EMBED_OPERATIONS | {TOOL_OPERATION}


def operation(span: SpanRecord) -> str:
    """`ai.operationId` when present, else the span name."""
    op = span.attributes.get("ai.operationId")
    return op if isinstance(op, str) and op else span.name


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


class VercelAI(Convention):
    name = "vercel"

    def detect(self, span: SpanRecord) -> bool:
        attrs = span.attributes
        return "ai.operationId" in attrs or "ai.model.id" in attrs or span.name in KNOWN_OPERATIONS

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        op = operation(span)
        if op in LLM_OPERATIONS:
            return SpanKind.LLM
        if op == TOOL_OPERATION:
            return SpanKind.TOOL
        if op in EMBED_OPERATIONS:
            return SpanKind.EMBEDDING
        if op.startswith("ai."):
            return SpanKind.OTHER
        return None

    def model(self, span: SpanRecord) -> str | None:
        value = _first(span.attributes, "ai.model.id", "ai.response.model")
        return value if isinstance(value, str) and value else None

    def response_model(self, span: SpanRecord) -> str | None:
        value = span.attributes.get("ai.response.model")
        return value if isinstance(value, str) and value else None

    def provider(self, span: SpanRecord) -> str | None:
        """The vendor part of `ai.model.provider` (`openai.chat` → `openai`)."""
        value = span.attributes.get("ai.model.provider")
        if not isinstance(value, str) or not value:
            return None
        return value.split(".", 1)[0] or value

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        attrs = span.attributes
        inp = as_int(_first(attrs, "ai.usage.promptTokens", "ai.usage.inputTokens"))
        out = as_int(_first(attrs, "ai.usage.completionTokens", "ai.usage.outputTokens"))
        if inp is None and out is None:
            return None  # the OTel fallback reads gen_ai.usage.*
        # AI SDK 5 writes cachedInputTokens / reasoningTokens (parts of input / output); 6 nests them in
        # inputTokenDetails / outputTokenDetails.
        return usage_from(
            inp,
            out,
            as_int(attrs.get("ai.usage.totalTokens")),
            cache_read=first_count(attrs, "ai.usage.cachedInputTokens", "ai.usage.inputTokenDetails.cacheReadTokens"),
            cache_write=first_count(attrs, "ai.usage.inputTokenDetails.cacheWriteTokens"),
            reasoning=first_count(attrs, "ai.usage.reasoningTokens", "ai.usage.outputTokenDetails.reasoningTokens"),
        )

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        raw = parse_json(span.attributes.get("ai.prompt.messages"))
        if not isinstance(raw, list):
            return None
        messages: list[Message] = []
        for item in raw:
            if isinstance(item, dict):
                messages.extend(_message(item))
        return messages

    def output(self, span: SpanRecord) -> LLMOutput | None:
        attrs = span.attributes
        text = as_text(_first(attrs, "ai.response.text", "ai.result.text"))
        if text is None:
            text = as_text(_first(attrs, "ai.response.object", "ai.result.object"))
        raw_calls = _first(attrs, "ai.response.toolCalls", "ai.result.toolCalls")
        calls = _response_tool_calls(raw_calls)
        reasons = as_str_list(_first(attrs, "ai.response.finishReason", "ai.finishReason"))
        if not reasons:
            reasons = as_str_list(attrs.get("gen_ai.response.finish_reasons"))
        if text is None and raw_calls is None and not reasons:
            return None
        return LLMOutput(text=text or None, tool_calls=calls, finish_reasons=reasons)

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        raw = span.attributes.get("ai.prompt.tools")
        if raw is None:
            return None
        return parse_tool_definitions(raw)

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        attrs = span.attributes
        if operation(span) != TOOL_OPERATION and "ai.toolCall.name" not in attrs:
            return None
        name = attrs.get("ai.toolCall.name")
        call_id = attrs.get("ai.toolCall.id")
        return ToolInvocation(
            name=name if isinstance(name, str) and name else None,
            call_id=call_id if isinstance(call_id, str) and call_id else None,
            arguments=_first(attrs, "ai.toolCall.args", "ai.toolCall.input"),
            result=_first(attrs, "ai.toolCall.result", "ai.toolCall.output"),
        )

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        attrs = span.attributes
        if operation(span) not in OUTER_OPERATIONS:
            return None
        prompt = attrs.get("ai.prompt")
        answer = _first(attrs, "ai.response.text", "ai.result.text")
        if answer in (None, ""):
            answer = _first(attrs, "ai.response.object", "ai.result.object")
        if prompt is None and answer is None:
            return None
        return _prompt_text(prompt), answer


def _prompt_text(value: Any) -> Any:
    """The user's request inside `ai.prompt` ({system?, prompt? | messages?}); raw text when unparsable."""
    parsed = parse_json(value)
    if not isinstance(parsed, dict):
        return value
    prompt = parsed.get("prompt")
    if isinstance(prompt, str) and prompt:
        return prompt
    messages = prompt if isinstance(prompt, list) else parsed.get("messages")
    if isinstance(messages, list):
        users = [
            m
            for m in messages
            if isinstance(m, dict) and normalize_role(m.get("role")) == "user" and _texts(m.get("content"))
        ]
        if users:
            return _texts(users[-1].get("content"))
    return value


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, str):
            texts.append(part)
    return "\n".join(texts)


def _tool_result_value(part: dict) -> Any:
    """v5 `output` is `{type: text|json|error-text|error-json|content, value}`; v4 `result` is raw."""
    output = part.get("output", part.get("result"))
    if isinstance(output, dict) and "type" in output and "value" in output:
        return output["value"]
    return output


def _message(item: dict) -> list[Message]:
    role = normalize_role(item.get("role"))
    content = item.get("content")
    if role == "system":
        return [SystemMessage(content=_texts(content))]
    calls: list[ToolCall] = []
    results: list[ToolMessage] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool-call":
            args = part.get("input", part.get("args"))
            calls.append(make_tool_call(part.get("toolName"), args, part.get("toolCallId")))
        elif kind == "tool-result":
            call_id, tool = part.get("toolCallId"), part.get("toolName")
            results.append(
                ToolMessage(
                    content=as_text(_tool_result_value(part)) or "",
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                    name=tool if isinstance(tool, str) else None,
                )
            )
    text = _texts(content)
    if results:
        head: list[Message] = [make_message(role, text)] if text and role != "tool" else []
        return head + results
    if role == "assistant":
        return [AssistantMessage(content=text, tool_calls=calls)]
    return [make_message(role, text)]


def _response_tool_calls(value: Any) -> list[ToolCall]:
    parsed = parse_json(value)
    calls = []
    for item in parsed if isinstance(parsed, list) else []:
        if isinstance(item, dict):
            args = item.get("input", item.get("args"))
            calls.append(make_tool_call(item.get("toolName"), args, item.get("toolCallId")))
    return calls
