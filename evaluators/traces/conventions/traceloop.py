"""OpenLLMetry / Traceloop: `traceloop.*` entities, legacy indexed `gen_ai.prompt.N.*` content.

From 0.55 the LLM content uses the OTel parts shape, which the OTel fallback reads.
"""

from __future__ import annotations

import re
from typing import Any

from ..jsonutil import as_int, as_str_list, as_text, parse_json, unflatten
from ..messages import (
    LLMOutput,
    Message,
    RetrievedDocument,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    make_message,
)
from ..records import SpanRecord
from .base import Convention, Retrieval, SpanKind, TokenUsage, ToolInvocation, first_count, usage_from
from .otel_genai import CACHE_READ_KEYS, CACHE_WRITE_KEYS, REASONING_KEYS, usage_from_attributes
from .parts import make_tool_call

_LEGACY_KEY = re.compile(r"^(gen_ai\.(prompt|completion)|llm\.(prompts|completions))\.\d+\.")
_ENTITY_KINDS = {"tool": SpanKind.TOOL, "agent": SpanKind.AGENT}
_REQUEST_TYPES = {"chat": SpanKind.LLM, "completion": SpanKind.LLM, "embedding": SpanKind.EMBEDDING}


class Traceloop(Convention):
    name = "traceloop"

    def detect(self, span: SpanRecord) -> bool:
        attrs = span.attributes
        if "traceloop.span.kind" in attrs or "llm.request.type" in attrs or "traceloop.entity.name" in attrs:
            return True
        return any(_LEGACY_KEY.match(key) for key in attrs)

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        attrs = span.attributes
        entity = attrs.get("traceloop.span.kind")
        if not isinstance(entity, str):  # an array/kvlist value would be unhashable
            entity = None
        if entity == "task" and attrs.get("gen_ai.operation.name") == "vector_db_retrieve":
            return SpanKind.RETRIEVER
        if entity in _ENTITY_KINDS:
            return _ENTITY_KINDS[entity]
        if entity in ("workflow", "task"):
            return SpanKind.OTHER
        request_type = attrs.get("llm.request.type")
        if not isinstance(request_type, str):
            return None
        if request_type in _REQUEST_TYPES:
            return _REQUEST_TYPES[request_type]
        if request_type == "rerank":
            return SpanKind.OTHER
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        if span.attributes.get("traceloop.span.kind") == "agent":
            name = span.attributes.get("traceloop.entity.name")
            if isinstance(name, str) and name:
                return name
        return None

    def model(self, span: SpanRecord) -> str | None:
        value = span.attributes.get("llm.request.model") or span.attributes.get("llm.response.model")
        return value if isinstance(value, str) else None

    def provider(self, span: SpanRecord) -> str | None:
        value = span.attributes.get("llm.vendor")
        return value if isinstance(value, str) else None

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        attrs = span.attributes
        inp = as_int(attrs.get("llm.usage.prompt_tokens"))
        out = as_int(attrs.get("llm.usage.completion_tokens"))
        if inp is None and out is None:
            # Since 2024-04 TL writes gen_ai.usage.prompt_tokens / completion_tokens beside llm.usage.total_tokens.
            from_gen_ai = usage_from_attributes(attrs)
            if from_gen_ai is not None:
                return from_gen_ai
        return usage_from(
            inp,
            out,
            as_int(attrs.get("llm.usage.total_tokens")),
            # details (OTel reader's keys): TL's `cache_read_input_tokens`, Anthropic's `cache_creation_input_tokens`,
            # OpenAI's `reasoning_tokens`, and the semconv names TL moved to. Cache tokens are a part of the input
            # (the Anthropic instrumentation adds them in), reasoning a part of the output (as OpenAI reports it).
            cache_read=first_count(attrs, *CACHE_READ_KEYS),
            cache_write=first_count(attrs, *CACHE_WRITE_KEYS),
            reasoning=first_count(attrs, *REASONING_KEYS),
        )

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        raw = unflatten(span.attributes, "gen_ai.prompt") or unflatten(span.attributes, "llm.prompts")
        if not raw:
            return None
        return [_legacy_message(item) for item in raw if isinstance(item, dict)]

    def output(self, span: SpanRecord) -> LLMOutput | None:
        raw = unflatten(span.attributes, "gen_ai.completion") or unflatten(span.attributes, "llm.completions")
        if not raw:
            return None
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasons: list[str] = []
        for item in raw:
            if not isinstance(item, dict):
                continue
            message = _legacy_message(item)
            if message.content:
                texts.append(message.content)
            calls.extend(getattr(message, "tool_calls", []))
            if isinstance(item.get("finish_reason"), str):
                reasons.append(item["finish_reason"])
        if not reasons:
            reasons = as_str_list(span.attributes.get("llm.response.finish_reason"))
        return LLMOutput(text="\n".join(texts) or None, tool_calls=calls, finish_reasons=reasons)

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        raw = unflatten(span.attributes, "llm.request.functions")
        if not raw:
            return None
        tools = []
        for item in raw:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                params = parse_json(item.get("parameters"))
                tools.append(
                    ToolDefinition(
                        name=item["name"],
                        description=as_text(item.get("description")),
                        parameters=params if isinstance(params, dict) else None,
                    )
                )
        return tools

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        attrs = span.attributes
        if attrs.get("traceloop.span.kind") != "tool":
            return None
        name = attrs.get("gen_ai.tool.name") or attrs.get("traceloop.entity.name")
        return ToolInvocation(
            name=str(name) if name else span.name.removesuffix(".tool"),
            arguments=attrs.get("gen_ai.tool.call.arguments") or _call_arguments(attrs.get("traceloop.entity.input")),
            result=parse_json(attrs.get("traceloop.entity.output")),
        )

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        attrs = span.attributes
        if self.span_kind(span) != SpanKind.RETRIEVER:
            return None
        query = parse_json(attrs.get("traceloop.entity.input"))
        if isinstance(query, dict):
            inputs = query.get("inputs")
            query = query.get("query") or (inputs.get("query") if isinstance(inputs, dict) else None)
        output = parse_json(attrs.get("traceloop.entity.output"))
        if isinstance(output, dict):
            output = output.get("documents") or output.get("outputs") or []
        docs = []
        for item in output if isinstance(output, list) else []:
            if isinstance(item, dict):
                content = item.get("page_content") or item.get("content") or item.get("text")
                metadata = item.get("metadata")
                docs.append(
                    RetrievedDocument(
                        id=as_text(item.get("id")),
                        content=as_text(content),
                        score=item.get("score") if isinstance(item.get("score"), (int, float)) else None,
                        metadata=metadata if isinstance(metadata, dict) else None,
                    )
                )
            elif isinstance(item, str):
                docs.append(RetrievedDocument(content=item))
        return Retrieval(query=as_text(query), documents=docs)

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        attrs = span.attributes
        if "traceloop.entity.input" not in attrs and "traceloop.entity.output" not in attrs:
            return None
        return attrs.get("traceloop.entity.input"), attrs.get("traceloop.entity.output")


def _call_arguments(value: Any) -> Any:
    """Decorator input `{"args": [...], "kwargs": {...}}` to the arguments a tool was called with."""
    parsed = parse_json(value)
    if not isinstance(parsed, dict) or not ({"args", "kwargs"} & set(parsed)):
        return value
    args, kwargs = parsed.get("args") or [], parsed.get("kwargs") or {}
    if not args:
        return kwargs
    if not kwargs and len(args) == 1 and isinstance(args[0], dict):
        return args[0]
    return {"args": args, **(kwargs if isinstance(kwargs, dict) else {})}


def _legacy_message(item: dict) -> Message:
    role = item.get("role")
    content = parse_json(item.get("content"))
    text = as_text(content) if not isinstance(content, list) else _list_text(content)
    tool_calls = item.get("tool_calls")
    calls = [
        make_tool_call(call.get("name"), call.get("arguments"), call.get("id"))
        for call in (tool_calls if isinstance(tool_calls, list) else [])
        if isinstance(call, dict)
    ]
    if str(role).lower() == "tool":
        return ToolMessage(content=text or "", tool_call_id=as_text(item.get("tool_call_id")))
    return make_message(role, text or "", tool_calls=calls)


def _list_text(content: list) -> str:
    texts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, str):
            texts.append(part)
    return "\n".join(texts)


__all__ = ["RetrievedDocument", "Traceloop"]
