"""Span views: LLMSpan, ToolSpan, RetrieverSpan, AgentSpan over one SpanRecord.

Cheap facts (names, ids, kinds, tokens) are read at build time; message content is parsed
lazily on first access, so a trace nobody reads the messages of never has its JSON parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from . import conventions as conv
from .conventions.base import SpanKind, TokenUsage
from .conventions.otel_genai import log_usage
from .conventions.parts import tool_arguments
from .jsonutil import as_text, parse_json_deep
from .messages import (
    AssistantMessage,
    LLMOutput,
    Message,
    RetrievedDocument,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    UserMessage,
)
from .records import STATUS_NAMES, SpanRecord
from .tool_join import JoinedCall, ToolCallJoin, with_reported_error


class Span:
    """Any span of a trace, with the facts common to every kind."""

    kind: SpanKind = SpanKind.OTHER

    def __init__(self, record: SpanRecord, conventions: tuple[conv.Convention, ...], agent_name: str | None):
        self.record = record
        self.conventions = conventions
        self.agent_name = agent_name

    def _facet(self, facet: str) -> Any:
        return conv.first(facet, self.record, self.conventions)

    @property
    def span_id(self) -> str:
        return self.record.span_id

    @property
    def parent_span_id(self) -> str:
        return self.record.parent_span_id

    @property
    def trace_id(self) -> str:
        return self.record.trace_id

    @property
    def span_name(self) -> str:
        return self.record.name

    @property
    def start_time(self) -> int:
        return self.record.start_time_unix_nano

    @property
    def end_time(self) -> int:
        return self.record.end_time_unix_nano

    @property
    def duration_ms(self) -> float:
        return self.record.duration_ms

    @property
    def status(self) -> str:
        code = self.record.status_code
        return STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else "UNSET"

    @property
    def attributes(self) -> dict[str, Any]:
        return self.record.attributes

    @property
    def convention_names(self) -> list[str]:
        return [c.name for c in self.conventions]

    @cached_property
    def error(self) -> str | None:
        """The error message when the span failed (status ERROR), else None."""
        record = self.record
        if not record.is_error:
            return None
        for event in record.events:
            if event.name == "exception":
                kind = as_text(event.attributes.get("exception.type")) or ""
                message = as_text(event.attributes.get("exception.message")) or ""
                return f"{kind}: {message}".strip(": ") or "error"
        error_type = as_text(record.attributes.get("error.type"))
        return record.status_message or error_type or "error"

    @property
    def has_error(self) -> bool:
        return self.record.is_error

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.record.name!r} {self.span_id}>"


def _is_set(value: Any) -> bool:
    return value is not None


def _says_something(output: LLMOutput | None) -> bool:
    return output is not None and (bool(output.text) or bool(output.tool_calls))


def answer_order(call: LLMSpan) -> tuple[bool, int]:
    """Sort key putting the call that gave the final answer last: the last to end, except that a call
    enclosing other calls (its end waits for theirs) never comes after one that does not."""
    return (not call.encloses_calls, call.end_time)


@dataclass
class LLMMetrics:
    """One call's figures; the token fields mean what `TokenUsage`'s do (details None when not reported)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    duration_ms: float = 0.0
    cost: float | None = None
    has_usage: bool = False
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


class LLMSpan(Span):
    """One call to a model.

    `wrapper` is the outer span of the same call when the framework writes two (ADK 1.x `call_llm` around
    `generate_content`): facets this span lacks, or only has as placeholders, are read from it.
    `encloses_calls` is set when another real call runs beneath this one (ADK 1.x sub-agents).
    """

    kind = SpanKind.LLM
    wrapper: LLMSpan | None = None
    encloses_calls: bool = False

    def _own_or_wrapper(self, read: Callable[[LLMSpan], Any], present: Callable[[Any], bool] = _is_set) -> Any:
        """`read(self)` when present, else the first present value up the wrapper chain, else `read(self)`."""
        own = read(self)
        span = self.wrapper
        while not present(own) and span is not None:  # a loop: chains of nested LLM spans can be long
            value = read(span)
            if present(value):
                return value
            span = span.wrapper
        return own

    @cached_property
    def model(self) -> str | None:
        return self._own_or_wrapper(lambda s: s._facet("model"))

    @cached_property
    def response_model(self) -> str | None:
        return self._own_or_wrapper(lambda s: s._facet("response_model"))

    @cached_property
    def provider(self) -> str | None:
        return self._own_or_wrapper(lambda s: s._facet("provider"))

    @cached_property
    def usage(self) -> TokenUsage | None:
        """Per-call usage: summed from per-call log records when present, else from the span."""
        return self._own_or_wrapper(lambda s: log_usage(s.record) or s._facet("usage"))

    @cached_property
    def metrics(self) -> LLMMetrics:
        usage = self.usage
        return LLMMetrics(
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            total_tokens=usage.total_tokens if usage else 0,
            duration_ms=self.duration_ms,
            cost=self._facet("cost"),
            has_usage=usage is not None,
            cache_read_tokens=usage.cache_read_tokens if usage else None,
            cache_write_tokens=usage.cache_write_tokens if usage else None,
            reasoning_tokens=usage.reasoning_tokens if usage else None,
        )

    @cached_property
    def messages(self) -> list[Message]:
        """Input messages in the order sent (system, user, assistant with tool calls, tool results)."""
        return self._own_or_wrapper(lambda s: s._facet("input_messages"), bool) or []

    @property
    def input_messages(self) -> list[Message]:
        return self.messages

    @cached_property
    def _output(self) -> LLMOutput:
        return self._own_or_wrapper(lambda s: s._facet("output"), _says_something) or LLMOutput()

    @property
    def response(self) -> str | None:
        """The model's text answer (None when it only requested tools)."""
        return self._output.text

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Tool calls the model requested in this response."""
        return self._output.tool_calls

    @property
    def finish_reasons(self) -> list[str]:
        return self._output.finish_reasons

    @cached_property
    def available_tools(self) -> list[ToolDefinition]:
        return self._own_or_wrapper(lambda s: s._facet("available_tools"), bool) or []

    @property
    def system_prompt(self) -> str | None:
        texts = [m.content for m in self.messages if isinstance(m, SystemMessage) and m.content]
        return "\n".join(texts) or None

    @property
    def user_input(self) -> str | None:
        """The first user text message sent to the model."""
        return next((m.content for m in self.messages if isinstance(m, UserMessage) and m.content), None)


class ToolSpan(Span):
    """One tool execution.

    `join` (set by `build_trace`) finds the call's arguments and result on the trace's LLM calls when the span
    itself records none (content in log events): a value on the span always wins, a joined one fills what it lacks.
    """

    kind = SpanKind.TOOL
    join: ToolCallJoin | None = None

    @cached_property
    def _invocation(self) -> conv.ToolInvocation:
        return self._facet("tool_invocation") or conv.ToolInvocation()

    @cached_property
    def _joined(self) -> JoinedCall:
        """The LLM calls' record of this call, looked up only when the span lacks its arguments or result."""
        invocation = self._invocation
        if self.join is None or (invocation.arguments is not None and invocation.result is not None):
            return JoinedCall()
        return self.join.lookup(self)

    @property
    def name(self) -> str:
        return self._invocation.name or self.record.name

    @cached_property
    def error(self) -> str | None:
        """The span's error, a bare marker (ADK's `TOOL_ERROR`) followed by the error the tool's result reports."""
        return with_reported_error(Span.error.func(self), self.record, self.result)  # type: ignore[attr-defined]

    @property
    def call_id(self) -> str | None:
        return self._invocation.call_id

    @property
    def description(self) -> str | None:
        return self._invocation.description

    @property
    def parameters(self) -> dict[str, Any] | None:
        """The tool's declared JSON schema, when the span records it."""
        return self._invocation.parameters

    @cached_property
    def _arguments(self) -> tuple[Any, str | None]:
        return tool_arguments(self.recorded_arguments)

    @property
    def arguments(self) -> Any:
        """Parsed JSON arguments when possible, the raw string otherwise."""
        return self._arguments[0]

    @property
    def arguments_error(self) -> str | None:
        return self._arguments[1]

    @cached_property
    def result(self) -> Any:
        return parse_json_deep(self.recorded_result)

    @property
    def recorded_arguments(self) -> Any:
        """The arguments as recorded (JSON text, usually), unparsed: the span's own, else the requesting call's."""
        own = self._invocation.arguments
        if own is not None:
            return own
        request = self._joined.request
        return request.arguments if request is not None else None

    @property
    def recorded_result(self) -> Any:
        """The result as recorded, unparsed: the span's own, else the one the next LLM request carried."""
        own = self._invocation.result
        if own is not None:
            return own
        result = self._joined.result
        return result.content if result is not None else None


class HandoffSpan(ToolSpan):
    """A transfer of control between agents (ADK `transfer_to_agent`, openai-agents `handoff to X`)."""

    kind = SpanKind.HANDOFF

    @cached_property
    def to_agent(self) -> str | None:
        target = self._facet("handoff_target")
        if target:
            return target
        arguments = self.arguments  # joined from the requesting LLM call when the span has none
        named = arguments.get("agent_name") if isinstance(arguments, dict) else None
        return named if isinstance(named, str) and named else None


class RetrieverSpan(Span):
    kind = SpanKind.RETRIEVER

    @cached_property
    def _retrieval(self) -> conv.Retrieval:
        return self._facet("retrieval") or conv.Retrieval()

    @property
    def query(self) -> str | None:
        return self._retrieval.query

    @property
    def documents(self) -> list[RetrievedDocument]:
        return self._retrieval.documents


class AgentSpan(Span):
    kind = SpanKind.AGENT

    @cached_property
    def name(self) -> str:
        return self._facet("agent_name") or self.record.name

    @cached_property
    def description(self) -> str | None:
        return self._facet("agent_description")

    @cached_property
    def available_tools(self) -> list[ToolDefinition]:
        return self._facet("available_tools") or []

    @cached_property
    def _io(self) -> tuple[Any, Any]:
        return self._facet("io") or (None, None)

    @property
    def input(self) -> Any:
        return self._io[0]

    @property
    def output(self) -> Any:
        return self._io[1]


@dataclass
class Handoff:
    from_agent: str | None
    to_agent: str | None
    span_id: str


VIEW_CLASSES: dict[SpanKind, type[Span]] = {
    SpanKind.LLM: LLMSpan,
    SpanKind.TOOL: ToolSpan,
    SpanKind.HANDOFF: HandoffSpan,
    SpanKind.RETRIEVER: RetrieverSpan,
    SpanKind.AGENT: AgentSpan,
}

__all__ = [
    "AgentSpan",
    "AssistantMessage",
    "Handoff",
    "HandoffSpan",
    "LLMMetrics",
    "LLMSpan",
    "RetrieverSpan",
    "Span",
    "ToolSpan",
    "answer_order",
]
