"""The interface every convention normalizer implements: facets that return None when absent."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..messages import LLMOutput, Message, RetrievedDocument, ToolDefinition
from ..records import SpanRecord


class SpanKind(StrEnum):
    LLM = "llm"
    TOOL = "tool"
    AGENT = "agent"
    RETRIEVER = "retriever"
    HANDOFF = "handoff"
    EMBEDDING = "embedding"
    OTHER = "other"


@dataclass
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass
class ToolInvocation:
    """What a tool-execution span says about the call it ran."""

    name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    result: Any = None
    description: str | None = None
    parameters: dict[str, Any] | None = None  # the tool's declared JSON schema, when the span records it


@dataclass
class Retrieval:
    query: str | None = None
    documents: list[RetrievedDocument] = field(default_factory=list)


class Convention:
    """One instrumentation convention. Every facet returns None when the span does not say."""

    name: str = "base"

    def detect(self, span: SpanRecord) -> bool:
        return False

    def span_kind(self, span: SpanRecord) -> SpanKind | None:
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        return None

    def agent_description(self, span: SpanRecord) -> str | None:
        return None

    def model(self, span: SpanRecord) -> str | None:
        return None

    def response_model(self, span: SpanRecord) -> str | None:
        return None

    def provider(self, span: SpanRecord) -> str | None:
        return None

    def usage(self, span: SpanRecord) -> TokenUsage | None:
        return None

    def cost(self, span: SpanRecord) -> float | None:
        return None

    def input_messages(self, span: SpanRecord) -> list[Message] | None:
        return None

    def output(self, span: SpanRecord) -> LLMOutput | None:
        return None

    def available_tools(self, span: SpanRecord) -> list[ToolDefinition] | None:
        return None

    def tool_invocation(self, span: SpanRecord) -> ToolInvocation | None:
        return None

    def handoff_target(self, span: SpanRecord) -> str | None:
        return None

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        return None

    def io(self, span: SpanRecord) -> tuple[Any, Any] | None:
        """Raw (input, output) a root, agent or chain span carries: text or a JSON envelope."""
        return None


def usage_from(input_tokens: int | None, output_tokens: int | None, total: int | None) -> TokenUsage | None:
    if input_tokens is None and output_tokens is None and total is None:
        return None
    inp, out = input_tokens or 0, output_tokens or 0
    return TokenUsage(inp, out, total if total is not None else inp + out)
