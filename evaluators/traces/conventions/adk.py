"""Google ADK native tracing: legacy `gcp.vertex.agent.*` JSON blobs; schema 2 is OTel-shaped.

Schema 2 (`invoke_workflow` → `invoke_agent` → `generate_content` / `execute_tool`) carries OTel
attributes, which the OTel fallback reads; this module adds the legacy `call_llm` / `agent_run`
tree and the JSON blobs (`llm_request`, `llm_response`, `tool_call_args`, `tool_response`).
"""

from __future__ import annotations

from typing import Any

from ..jsonutil import as_text, get_path, parse_json
from ..messages import LLMOutput, Message, SystemMessage, ToolDefinition
from ..records import SpanRecord
from .base import Convention, SpanKind, TokenUsage, ToolInvocation, token_count, usage_from
from .otel_genai import name_suffix
from .parts import content_text, gemini_contents, gemini_output, parse_tool_definitions

PREFIX = "gcp.vertex.agent."
SCOPE = "gcp.vertex.agent"


def _blob(span: SpanRecord, key: str) -> dict | None:
    value = parse_json(span.attributes.get(PREFIX + key))
    return value if isinstance(value, dict) and value else None


class GoogleADK(Convention):
    name = "adk"

    def detect(self, span: SpanRecord) -> bool:
        if span.scope_name == SCOPE:
            return True
        return any(key.startswith(PREFIX) for key in span.attributes)

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        name = span.name
        if name == "call_llm":
            return SpanKind.LLM
        if name.startswith("agent_run"):
            return SpanKind.AGENT
        if name.startswith("invocation") or name == "send_data":
            return SpanKind.OTHER
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        name = span.name
        if name.startswith("agent_run [") and name.endswith("]"):
            return name[len("agent_run [") : -1] or None
        return None

    def model(self, span: SpanRecord) -> str | None:
        request = _blob(span, "llm_request")
        value = request.get("model") if request else None
        return value if isinstance(value, str) else None

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        response = _blob(span, "llm_response")
        meta = (response or {}).get("usage_metadata") or (response or {}).get("usageMetadata")
        if not isinstance(meta, dict):
            return None
        # Gemini counts cached content inside the prompt, but thoughts apart from the candidates: they are added
        # to the output (as the google-genai OTel instrumentation does), so output includes reasoning everywhere.
        thoughts = token_count(_meta(meta, "thoughts_token_count", "thoughtsTokenCount"))
        candidates = token_count(_meta(meta, "candidates_token_count", "candidatesTokenCount"))
        if thoughts is not None:
            candidates = (candidates or 0) + thoughts
        return usage_from(
            token_count(_meta(meta, "prompt_token_count", "promptTokenCount")),
            candidates,
            token_count(_meta(meta, "total_token_count", "totalTokenCount")),
            cache_read=_meta(meta, "cached_content_token_count", "cachedContentTokenCount"),
            reasoning=thoughts,
        )

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        request = _blob(span, "llm_request")
        if request is None:
            return None
        messages: list[Message] = []
        system = get_path(request, "config", "system_instruction")
        system_text = content_text(system.get("parts") if isinstance(system, dict) else system)
        if system_text:
            messages.append(SystemMessage(content=system_text))
        messages.extend(gemini_contents(request.get("contents")))
        return messages

    def output(self, span: SpanRecord) -> LLMOutput | None:
        return gemini_output(_blob(span, "llm_response"))

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        request = _blob(span, "llm_request")
        tools = get_path(request, "config", "tools")
        return parse_tool_definitions(tools) if isinstance(tools, list) else None

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        attrs = span.attributes
        if PREFIX + "tool_call_args" not in attrs and PREFIX + "tool_response" not in attrs:
            return None
        args = attrs.get(PREFIX + "tool_call_args")
        response = attrs.get(PREFIX + "tool_response")
        return ToolInvocation(
            name=as_text(attrs.get("gen_ai.tool.name")),
            arguments=None if args == "{}" and "gen_ai.tool.call.arguments" in attrs else args,
            result=response,
        )

    def handoff_target(self, span: SpanRecord) -> str | None:
        """Legacy `transfer_to_agent` spans carry the target in `tool_call_args`, not `gen_ai.tool.call.arguments`."""
        attrs = span.attributes
        if (attrs.get("gen_ai.tool.name") or name_suffix(span, "execute_tool ")) != "transfer_to_agent":
            return None
        args = parse_json(attrs.get(PREFIX + "tool_call_args"))
        target = args.get("agent_name") if isinstance(args, dict) else None
        return str(target) if target else None

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        return None


def _meta(meta: dict[str, Any], snake: str, camel: str) -> Any:
    """A `usage_metadata` field, snake_case (ADK) or camelCase (Gemini REST)."""
    value = meta.get(snake)
    return meta.get(camel) if value is None else value
