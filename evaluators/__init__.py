"""agent-monitor's evaluator SDK: trace views, the evaluator API and the builtin evaluators.

`from evaluators import load_traces` reads saved OTLP traces for offline evaluator tests.

The names of `__all__` are imported from their subpackage (`evaluators.traces`, `.sdk`, `.signatures`) when first
used, so that importing one part of the SDK (the trace views and decoders, for `agent-monitor inspect`) does not
import all of it (the evaluator API and its pydantic models).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sdk import (
        BaseEvaluator,
        Constraints,
        Dataset,
        EvalResult,
        EvaluationRecord,
        EvaluatorConfigError,
        EvaluatorInfo,
        Param,
        SkipReason,
        Task,
        TrajectoryStep,
        aggregate,
        builtin,
        evaluator,
        list_builtins,
        load_evaluator,
        register,
        run_evaluators,
    )
    from .signatures import Failure, FailureSignature
    from .traces import (
        AgentSpan,
        AgentTrace,
        AssistantMessage,
        DecodedBatch,
        Handoff,
        HandoffSpan,
        InvalidIdError,
        LLMMetrics,
        LLMSpan,
        LogRecord,
        Message,
        RetrievedDocument,
        RetrieverSpan,
        Span,
        SpanEvent,
        SpanLink,
        SpanRecord,
        SystemMessage,
        ToolCall,
        ToolDefinition,
        ToolMessage,
        ToolSpan,
        Trace,
        TraceDecodeError,
        TraceMetrics,
        UserMessage,
        build_trace,
        decode_bytes,
        group_by_trace,
        join_logs,
        load_traces,
        read_paths,
        traces_from_batch,
    )

__all__ = [  # every name of evaluators.traces (a test keeps them equal), the SDK's API and its Failure types
    "AgentSpan",
    "AgentTrace",
    "AssistantMessage",
    "BaseEvaluator",
    "Constraints",
    "Dataset",
    "DecodedBatch",
    "EvalResult",
    "EvaluationRecord",
    "EvaluatorConfigError",
    "EvaluatorInfo",
    "Failure",
    "FailureSignature",
    "Handoff",
    "HandoffSpan",
    "InvalidIdError",
    "LLMMetrics",
    "LLMSpan",
    "LogRecord",
    "Message",
    "Param",
    "RetrievedDocument",
    "RetrieverSpan",
    "SkipReason",
    "Span",
    "SpanEvent",
    "SpanLink",
    "SpanRecord",
    "SystemMessage",
    "Task",
    "ToolCall",
    "ToolDefinition",
    "ToolMessage",
    "ToolSpan",
    "Trace",
    "TraceDecodeError",
    "TraceMetrics",
    "TrajectoryStep",
    "UserMessage",
    "aggregate",
    "build_trace",
    "builtin",
    "decode_bytes",
    "evaluator",
    "group_by_trace",
    "join_logs",
    "list_builtins",
    "load_evaluator",
    "load_traces",
    "read_paths",
    "register",
    "run_evaluators",
    "traces_from_batch",
]
_HOMES = (".traces", ".sdk", ".signatures")  # where the names of __all__ are defined, cheapest first


def __getattr__(name: str) -> Any:
    """A name of `__all__`, imported from its subpackage on first use (then kept as an attribute)."""
    if name in __all__:
        for home in _HOMES:
            module = importlib.import_module(home, __name__)
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
