"""Plain-dict (JSON-ready) form of the trace views, for `agent-monitor inspect --json` and tools."""

from __future__ import annotations

import base64
from dataclasses import asdict
from typing import Any

from .conventions.base import TokenUsage
from .messages import AssistantMessage, Message, ToolMessage
from .model import AgentTrace, Trace
from .spans import LLMSpan, RetrieverSpan, Span, ToolSpan


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def message_dict(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if isinstance(message, AssistantMessage) and message.tool_calls:
        data["tool_calls"] = [_jsonable(asdict(c)) for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        data["tool_call_id"] = message.tool_call_id
        data["name"] = message.name
    return data


def _span_base(span: Span) -> dict[str, Any]:
    return {
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id or None,
        "name": span.span_name,
        "kind": span.kind.value,
        "agent": span.agent_name,
        "duration_ms": round(span.duration_ms, 3),
        "status": span.status,
        "error": span.error,
        "conventions": span.convention_names,
    }


def llm_dict(call: LLMSpan) -> dict[str, Any]:
    metrics = call.metrics
    return {
        **_span_base(call),
        "model": call.model,
        "response_model": call.response_model,
        "provider": call.provider,
        "messages": [message_dict(m) for m in call.messages],
        "response": call.response,
        "tool_calls": [_jsonable(asdict(c)) for c in call.tool_calls],
        "finish_reasons": call.finish_reasons,
        "available_tools": [_jsonable(asdict(t)) for t in call.available_tools],
        "metrics": {
            "input_tokens": metrics.input_tokens,
            "output_tokens": metrics.output_tokens,
            "total_tokens": metrics.total_tokens,
            "cache_read_tokens": metrics.cache_read_tokens,
            "cache_write_tokens": metrics.cache_write_tokens,
            "reasoning_tokens": metrics.reasoning_tokens,
            "duration_ms": round(metrics.duration_ms, 3),
            "cost": metrics.cost,
        },
    }


def tool_dict(tool: ToolSpan) -> dict[str, Any]:
    return {
        **_span_base(tool),
        "tool": tool.name,
        "call_id": tool.call_id,
        "arguments": _jsonable(tool.arguments),
        "arguments_error": tool.arguments_error,
        "result": _jsonable(tool.result),
    }


def retrieval_dict(span: RetrieverSpan) -> dict[str, Any]:
    return {
        **_span_base(span),
        "query": span.query,
        "documents": [_jsonable(asdict(d)) for d in span.documents],
    }


def _usage_detail(usage: TokenUsage) -> dict[str, int | None]:
    return {
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def agent_trace_dict(agent: AgentTrace) -> dict[str, Any]:
    usage = agent.metrics.token_usage
    return {
        "agent": agent.agent_name,
        "description": agent.description,
        "input": agent.input,
        "input_source": agent.input_source,  # the rule that chose `input` (turn_input.InputSource)
        "output": agent.output,
        "steps": [
            {"type": "llm", "span_id": s.span_id} if isinstance(s, LLMSpan) else {"type": "tool", "span_id": s.span_id}
            for s in agent.steps
        ],
        "tool_names_used": agent.tool_names_used,
        "available_tools": [t.name for t in agent.available_tools],
        "has_errors": agent.has_errors,
        "metrics": {
            "llm_calls": agent.metrics.llm_call_count,
            "tool_calls": agent.metrics.tool_call_count,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            **_usage_detail(usage),
            "duration_ms": round(agent.metrics.total_duration_ms, 3),
        },
    }


def trace_dict(trace: Trace) -> dict[str, Any]:
    """The whole normalized view of a trace as JSON-ready data."""
    metrics = trace.metrics
    usage = metrics.token_usage
    return {
        "trace_id": trace.trace_id,
        "service_name": trace.service_name,
        "start_time_unix_nano": trace.start_time,
        "span_count": trace.span_count,
        "root": trace.root.span_name if trace.root else None,
        "input": trace.input,
        "input_source": trace.input_source,  # the rule that chose `input` (turn_input.InputSource)
        "output": trace.output,
        "metrics": {
            "total_duration_ms": round(metrics.total_duration_ms, 3),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            **_usage_detail(usage),
            "llm_calls": metrics.llm_call_count,
            "tool_calls": metrics.tool_call_count,
            "error_count": metrics.error_count,
            "has_errors": metrics.has_errors,
            "cost": metrics.cost,
        },
        "agents": trace.agent_names,
        "handoffs": [asdict(h) for h in trace.handoffs],
        "llm_calls": [llm_dict(c) for c in trace.get_llm_calls()],
        "tool_calls": [tool_dict(t) for t in trace.get_tool_calls()],
        "retrievals": [retrieval_dict(r) for r in trace.get_retrievals()],
        "agent_traces": [agent_trace_dict(a) for a in trace.agent_traces()],
        "error_spans": [{"span_id": s.span_id, "name": s.span_name, "error": s.error} for s in trace.error_spans()],
        "spans": [_span_base(s) for s in trace.spans],
    }


__all__ = ["agent_trace_dict", "llm_dict", "message_dict", "retrieval_dict", "tool_dict", "trace_dict"]
