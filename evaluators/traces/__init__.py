"""OTLP decoding, convention normalizers and the trace views (Trace, AgentTrace, LLMSpan, ...)."""

from .builder import build_trace, group_by_trace
from .errors import InvalidIdError, TraceDecodeError
from .loader import decode_bytes, join_logs, load_traces, read_paths, traces_from_batch
from .messages import (
    AssistantMessage,
    Message,
    RetrievedDocument,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from .model import AgentTrace, Trace, TraceMetrics
from .records import DecodedBatch, LogRecord, SpanEvent, SpanLink, SpanRecord
from .spans import AgentSpan, Handoff, HandoffSpan, LLMMetrics, LLMSpan, RetrieverSpan, Span, ToolSpan

__all__ = [
    "AgentSpan",
    "AgentTrace",
    "AssistantMessage",
    "DecodedBatch",
    "Handoff",
    "HandoffSpan",
    "InvalidIdError",
    "LLMMetrics",
    "LLMSpan",
    "LogRecord",
    "Message",
    "RetrievedDocument",
    "RetrieverSpan",
    "Span",
    "SpanEvent",
    "SpanLink",
    "SpanRecord",
    "SystemMessage",
    "ToolCall",
    "ToolDefinition",
    "ToolMessage",
    "ToolSpan",
    "Trace",
    "TraceDecodeError",
    "TraceMetrics",
    "UserMessage",
    "build_trace",
    "decode_bytes",
    "group_by_trace",
    "join_logs",
    "load_traces",
    "read_paths",
    "traces_from_batch",
]
