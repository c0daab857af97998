"""OpenInference (Arize): `openinference.span.kind` and flattened, indexed attributes."""

from __future__ import annotations

import json
from typing import Any

from ..jsonutil import as_float, as_int, as_str_list, as_text, parse_json, unflatten
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
from .base import Convention, Retrieval, SpanKind, TokenUsage, ToolInvocation, usage_from
from .parts import make_tool_call, object_schema, parse_tool_definitions, responses_output

_KINDS = {
    "LLM": SpanKind.LLM,
    "TOOL": SpanKind.TOOL,
    "AGENT": SpanKind.AGENT,
    "RETRIEVER": SpanKind.RETRIEVER,
    "EMBEDDING": SpanKind.EMBEDDING,
    "RERANKER": SpanKind.RETRIEVER,
}


class OpenInference(Convention):
    name = "openinference"

    def detect(self, span: SpanRecord) -> bool:
        return "openinference.span.kind" in span.attributes

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        kind = str(span.attributes.get("openinference.span.kind", "")).upper()
        if kind == "TOOL" and self.handoff_target(span) is not None:
            return SpanKind.HANDOFF
        if kind == "AGENT" and _is_run_envelope(span):
            return SpanKind.OTHER
        if kind == "LLM" and not _records_a_call(span):
            return SpanKind.OTHER
        if kind == "TOOL" and span.attributes.get("tool.name") in ANSWER_TOOLS:
            return SpanKind.OTHER
        return _KINDS.get(kind, SpanKind.OTHER)

    def agent_name(self, span: SpanRecord) -> str | None:
        attrs = span.attributes
        for key in ("agent.name", "graph.node.id"):
            value = attrs.get(key)
            if isinstance(value, str) and value:
                return _strip_brackets(value)
        if str(attrs.get("openinference.span.kind", "")).upper() == "AGENT":
            return _strip_run_suffix(_strip_brackets(span.name))
        return None

    def model(self, span: SpanRecord) -> str | None:
        attrs = span.attributes
        value = attrs.get("llm.request.model_name") or attrs.get("llm.model_name")
        if not value:  # a failed call has no response to name the model: the request parameters do
            params = parse_json(attrs.get("llm.invocation_parameters"))
            value = params.get("model") if isinstance(params, dict) else None
        return value if isinstance(value, str) and value else None

    def response_model(self, span: SpanRecord) -> str | None:
        value = span.attributes.get("llm.response.model_name") or span.attributes.get("llm.model_name")
        return value if isinstance(value, str) else None

    def provider(self, span: SpanRecord) -> str | None:
        attrs = span.attributes
        value = attrs.get("llm.system") or attrs.get("llm.provider")
        return value if isinstance(value, str) else None

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        attrs = span.attributes
        # The details are parts of prompt / completion (the OpenAI and Anthropic instrumentors report them so).
        return usage_from(
            as_int(attrs.get("llm.token_count.prompt")),
            as_int(attrs.get("llm.token_count.completion")),
            as_int(attrs.get("llm.token_count.total")),
            cache_read=attrs.get("llm.token_count.prompt_details.cache_read"),
            cache_write=attrs.get("llm.token_count.prompt_details.cache_write"),
            reasoning=attrs.get("llm.token_count.completion_details.reasoning"),
        )

    def cost(self, span: SpanRecord) -> float | None:
        attrs = span.attributes
        total = as_float(attrs.get("llm.cost.total"))
        if total is not None:
            return total
        prompt, completion = (
            as_float(attrs.get("llm.cost.prompt")),
            as_float(attrs.get("llm.cost.completion")),
        )
        if prompt is None and completion is None:
            return None
        return (prompt or 0.0) + (completion or 0.0)

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        raw = unflatten(span.attributes, "llm.input_messages")
        if raw:
            return [m for item in raw if (m := _message(item)) is not None]
        prompts = unflatten(span.attributes, "llm.prompts")
        if prompts:
            texts = [as_text(_get(p, "prompt", "text")) for p in prompts]
            return [make_message("user", t) for t in texts if t]
        return None

    def output(self, span: SpanRecord) -> LLMOutput | None:
        raw = unflatten(span.attributes, "llm.output_messages")
        reasons = as_str_list(span.attributes.get("llm.finish_reason"))
        if not raw:
            # openai-agents' streamed Chat Completions calls record their output only in `output.value`, as a
            # Responses-API object the instrumentor does not flatten into `llm.output_messages`
            fallback = responses_output(span.attributes.get("output.value")) if _is_llm(span) else None
            if fallback is not None:
                return LLMOutput(fallback.text, fallback.tool_calls, reasons or fallback.finish_reasons)
            return LLMOutput(finish_reasons=reasons) if reasons else None
        texts: list[str] = []
        calls: list[ToolCall] = []
        for item in raw:
            message = _message(item)
            if message is None:
                continue
            if message.content:
                texts.append(message.content)
            calls.extend(getattr(message, "tool_calls", []))
        return LLMOutput(text="\n".join(texts) or None, tool_calls=calls, finish_reasons=reasons)

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        raw = unflatten(span.attributes, "llm.tools")
        if not raw:
            return None
        schemas = [_get(item, "tool", "json_schema") for item in raw]
        return parse_tool_definitions([s for s in schemas if s is not None])

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        attrs = span.attributes
        if str(attrs.get("openinference.span.kind", "")).upper() != "TOOL":
            return None
        name = attrs.get("tool.name") or span.name
        call_id = attrs.get("tool_call.id") or attrs.get("tool.id")
        result = attrs.get("output.value")
        parsed = parse_json(result)
        # ADK via OpenInference wraps results as {"id", "name", "response"}.
        if isinstance(parsed, dict) and set(parsed) == {"id", "name", "response"}:
            result = parsed["response"]
        # LlamaIndex records its ToolOutput: {"blocks", "tool_name", "raw_input", "raw_output", "is_error"}
        if isinstance(parsed, dict) and "tool_name" in parsed and "raw_output" in parsed:
            result = (
                json.dumps(parsed["raw_output"]) if not isinstance(parsed["raw_output"], str) else parsed["raw_output"]
            )
        message = _langchain_tool_message(parsed)
        if message is not None:
            result = message.get("content")
            call_id = call_id or message.get("tool_call_id")
        return ToolInvocation(
            name=str(name),
            call_id=call_id if isinstance(call_id, str) else None,
            arguments=_tool_arguments(attrs),
            result=result,
            description=attrs.get("tool.description") if isinstance(attrs.get("tool.description"), str) else None,
            # OpenInference on ADK records the call's arguments under `tool.parameters`: not a schema
            parameters=object_schema(attrs.get("tool.parameters")),
        )

    def handoff_target(self, span: SpanRecord) -> str | None:
        attrs = span.attributes
        name = attrs.get("tool.name") or span.name
        if isinstance(name, str) and name.startswith("handoff to "):
            return as_text(attrs.get("output.value")) or name[len("handoff to ") :]
        if name == "transfer_to_agent":
            args = parse_json(attrs.get("input.value"))
            return str(args.get("agent_name") or "") if isinstance(args, dict) else ""
        return None

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        attrs = span.attributes
        raw = unflatten(attrs, "retrieval.documents")
        if not raw and str(attrs.get("openinference.span.kind", "")).upper() != "RETRIEVER":
            return None
        docs = []
        for item in raw:
            doc = _get(item, "document") or {}
            metadata = parse_json(doc.get("metadata")) if isinstance(doc, dict) else None
            docs.append(
                RetrievedDocument(
                    id=as_text(doc.get("id")) if isinstance(doc, dict) else None,
                    content=as_text(doc.get("content")) if isinstance(doc, dict) else None,
                    score=as_float(doc.get("score")) if isinstance(doc, dict) else None,
                    metadata=metadata if isinstance(metadata, dict) else None,
                )
            )
        return Retrieval(query=as_text(attrs.get("input.value")), documents=docs)

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        attrs = span.attributes
        if "input.value" not in attrs and "output.value" not in attrs:
            return None
        return attrs.get("input.value"), attrs.get("output.value")


OPENAI_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"
# Tools through which an agent hands back its answer (smolagents' FinalAnswerTool): the answer, not a tool call.
ANSWER_TOOLS = frozenset({"final_answer"})
# Attributes only a span that made (or tried) a model request carries; `__REDACTED__` is OI's hidden content.
_CALL_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "llm.prompts.", "llm.token_count.", "llm.cost.")
_HIDDEN = "__REDACTED__"


def _records_a_call(span: SpanRecord) -> bool:
    """False for an LLM-kind span with no request, response or usage of its own: a helper or wrapper step
    (LlamaIndex `_prepare_chat_with_tools`, `predict` / `structured_predict` around the real chat span)."""
    attrs = span.attributes
    if span.is_error or _HIDDEN in (attrs.get("input.value"), attrs.get("output.value")):
        return True
    return any(key.startswith(_CALL_PREFIXES) for key in attrs)


def _is_run_envelope(span: SpanRecord) -> bool:
    """The AGENT-kind span openai-agents' instrumentor opens per SDK trace ("Agent workflow"): not an agent.

    Real agent spans name their agent (`agent.name`, `graph.node.id`); the envelope names none.
    """
    if not span.scope_name.startswith(OPENAI_AGENTS_SCOPE):
        return False
    return not any(span.attributes.get(key) for key in ("agent.name", "graph.node.id"))


def _is_llm(span: SpanRecord) -> bool:
    return str(span.attributes.get("openinference.span.kind", "")).upper() == "LLM"


def _langchain_tool_message(value: Any) -> dict | None:
    """The fields of a serialized LangChain ToolMessage (`{"type": "tool", "data": {...}}` or `dumpd` form)."""
    if not isinstance(value, dict):
        return None
    if value.get("type") == "tool" and isinstance(value.get("data"), dict) and "content" in value["data"]:
        return value["data"]
    ident, kwargs = value.get("id"), value.get("kwargs")
    if value.get("lc") and isinstance(ident, list) and ident[-1:] == ["ToolMessage"] and isinstance(kwargs, dict):
        return kwargs
    return None


def _tool_arguments(attrs: dict[str, Any]) -> Any:
    """`input.value`; plain text (no JSON mime type, not JSON-shaped, e.g. LangChain's single-argument
    tools) is one string argument, JSON-encoded so it is not mistaken for broken JSON. A Python call's
    bound arguments (`{"args": [...], "kwargs": {...}}`) are the call's keyword arguments."""
    value = attrs.get("input.value")
    called = _call_arguments(parse_json(value), attrs.get("tool.parameters"))
    if called is not None:
        return json.dumps(called, ensure_ascii=False)
    if not isinstance(value, str) or attrs.get("input.mime_type") == "application/json":
        return value
    if value.lstrip()[:1] in ("{", "[", '"') or parse_json(value) is not value:
        return value
    return json.dumps(value)


def _call_arguments(value: Any, parameters: Any) -> dict[str, Any] | None:
    """The arguments of a recorded Python call, `{"args": [...], "kwargs": {...}}` plus the wrapper's own
    scalar flags (smolagents' `sanitize_inputs_outputs`), by name: positional ones take the declared parameters'
    names in order. None when the value is not such a call or a positional argument has no name."""
    if not isinstance(value, dict) or not isinstance(kwargs := value.get("kwargs"), dict):
        return None
    args = value.get("args", [])
    others = [v for k, v in value.items() if k not in ("args", "kwargs")]
    if not isinstance(args, list) or any(isinstance(v, (dict, list)) for v in others):
        return None
    if not args:
        return kwargs
    schema = parse_json(parameters)
    names = schema.get("properties", schema) if isinstance(schema, dict) else None
    names = [n for n in names if n not in kwargs] if isinstance(names, dict) else []
    if len(names) < len(args):
        return None
    return {**dict(zip(names, args, strict=False)), **kwargs}


def _strip_run_suffix(name: str) -> str:
    # smolagents: "weather_agent.run" -> "weather_agent"
    return name.removesuffix(".run") or name


def _strip_brackets(name: str) -> str:
    # "agent_run [triage_agent]" -> "triage_agent"
    if name.endswith("]") and "[" in name:
        return name[name.rindex("[") + 1 : -1] or name
    return name


def _get(item: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(item, dict):
            return None
        item = item.get(key)
    return item


def _message(item: Any) -> Message | None:
    message = _get(item, "message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    content = message.get("content")
    if content is None and isinstance(message.get("contents"), list):
        texts = []
        for part in message["contents"]:
            mc = _get(part, "message_content")
            if isinstance(mc, dict) and mc.get("type", "text") == "text" and isinstance(mc.get("text"), str):
                texts.append(mc["text"])
        content = "\n".join(texts)
    calls = []
    tool_calls = message.get("tool_calls")
    for call in tool_calls if isinstance(tool_calls, list) else []:
        tc = _get(call, "tool_call")
        if isinstance(tc, dict):
            fn = nested if isinstance(nested := tc.get("function"), dict) else {}
            calls.append(make_tool_call(fn.get("name"), fn.get("arguments"), tc.get("id")))
    text = as_text(content) or ""
    if str(role).lower() == "tool":
        return ToolMessage(content=text, tool_call_id=message.get("tool_call_id"), name=message.get("name"))
    return make_message(role, text, tool_calls=calls)
