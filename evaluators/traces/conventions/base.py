"""The interface every convention normalizer implements: facets that return None when absent."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..jsonutil import as_int
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
    """Tokens of one LLM call (or a sum of calls), normalized across conventions.

    - `input_tokens`: every prompt token, cached ones included (cache reads and, where reported, cache writes are
      a part of it: OTel GenAI says input SHOULD include them, and OpenInference, OpenLLMetry and Gemini report
      them so). Strands reports whatever its model provider gives (Bedrock counts cache tokens apart).
    - `output_tokens`: every generated token, reasoning included (OpenAI reports it so; Gemini does not, so the
      ADK `usage_metadata` reader adds `thoughts_token_count`, as the google-genai OTel instrumentation does).
    - `total_tokens`: as reported, else input + output.
    - `cache_read_tokens`: the part of `input_tokens` read from a prompt cache.
    - `cache_write_tokens`: the part of `input_tokens` written to a prompt cache (Anthropic cache creation).
    - `reasoning_tokens`: the part of `output_tokens` spent on reasoning / thinking.

    The detail fields are None when the span does not report them and 0 only when it reports 0; a sum keeps
    None only when no part reported the field.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            _add(self.cache_read_tokens, other.cache_read_tokens),
            _add(self.cache_write_tokens, other.cache_write_tokens),
            _add(self.reasoning_tokens, other.reasoning_tokens),
        )


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else a + b


def token_count(value: Any) -> int | None:
    """A reported token count: a non-negative int, or None for anything else (absent, negative, not a number)."""
    if type(value) is int:  # the usual case, first (this runs several times per LLM call)
        return value if value >= 0 else None
    if value is None:
        return None
    count = as_int(value)
    return count if count is not None and count >= 0 else None


def first_count(attrs: dict[str, Any], *keys: str) -> int | None:
    """The first of `keys` that holds a token count."""
    for key in keys:
        value = attrs.get(key)
        if value is None:  # the usual case: most keys are absent
            continue
        count = token_count(value)
        if count is not None:
            return count
    return None


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


def usage_from(
    input_tokens: int | None,
    output_tokens: int | None,
    total: int | None,
    *,
    cache_read: Any = None,
    cache_write: Any = None,
    reasoning: Any = None,
) -> TokenUsage | None:
    """The usage a span reports, or None when it reports no input, output or total; negative counts are dropped."""
    inp = input_tokens if input_tokens is not None and input_tokens >= 0 else None
    out = output_tokens if output_tokens is not None and output_tokens >= 0 else None
    total = total if total is not None and total >= 0 else None
    if inp is None and out is None and total is None:
        return None
    inp, out = inp or 0, out or 0
    return TokenUsage(
        inp,
        out,
        total if total is not None else inp + out,
        token_count(cache_read),
        token_count(cache_write),
        token_count(reasoning),
    )
