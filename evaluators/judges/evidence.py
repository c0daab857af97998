"""What the builtin judges read from the trace views: the answer, instructions, tool results, steps.

Helpers over `Trace`, `AgentTrace` and `LLMSpan` that return prompt text or `ToolEvidence`; they never
raise on missing content (None or an empty list means "not recorded").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..sdk.result import EvalResult, SkipReason
from ..traces.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage
from ..traces.model import AgentTrace, Trace
from ..traces.spans import LLMSpan, RetrieverSpan, Span, ToolSpan
from .prompt import NOT_RECORDED, ToolEvidence, as_text, clip, format_documents, item_share

INSTRUCTIONS_SEPARATOR = "\n\n---\n\n"


def answer_of(text: str | None) -> str | None:
    """`text` when it holds something to judge, else None (not recorded, or recorded blank)."""
    return text if isinstance(text, str) and text.strip() else None


def no_answer(what: str = "the trace") -> EvalResult:
    return EvalResult.skip(SkipReason.NO_DATA, f"{what} has no final answer to judge")


def system_instructions(calls: Iterable[LLMSpan]) -> str | None:
    """The distinct system prompts of these calls, in order (several agents may have their own)."""
    seen: dict[str, None] = {}
    for call in calls:
        text = call.system_prompt
        if text and text.strip():
            seen.setdefault(text.strip(), None)
    return INSTRUCTIONS_SEPARATOR.join(seen) or None


def tool_span_evidence(span: ToolSpan) -> ToolEvidence:
    return ToolEvidence(span.name, span.arguments, span.result, span.error)


def _requested_calls(calls: Iterable[LLMSpan]) -> dict[str, ToolCall]:
    """Tool calls the model requested, by call id (from the calls' outputs and input histories)."""
    found: dict[str, ToolCall] = {}
    for call in calls:
        for message in call.messages:
            if isinstance(message, AssistantMessage):
                found.update((c.id, c) for c in message.tool_calls if c.id)
        found.update((c.id, c) for c in call.tool_calls if c.id)
    return found


def message_tool_results(calls: Sequence[LLMSpan]) -> list[ToolEvidence]:
    """Tool results fed back to the models (tool messages of the calls' inputs), each once, in order."""
    requested = _requested_calls(calls)
    seen: set[tuple[str | None, str]] = set()
    results: list[ToolEvidence] = []
    for call in calls:
        for message in call.messages:
            if not isinstance(message, ToolMessage) or not message.content:
                continue
            key = (message.tool_call_id or message.name, message.content)
            if key in seen:
                continue
            seen.add(key)
            asked = requested.get(message.tool_call_id or "")
            name = message.name or (asked.name if asked else "tool")
            results.append(ToolEvidence(name, asked.arguments if asked else None, message.content))
    return results


def tool_results(tools: Sequence[ToolSpan], calls: Sequence[LLMSpan]) -> list[ToolEvidence]:
    """Every tool call of the run with its result: the tool spans when each recorded a result or an error;
    otherwise the tool messages of the LLM inputs (what the models were fed back), or failing those the
    tool spans as they are."""
    spans = [tool_span_evidence(t) for t in tools]
    if spans and all(t.result is not None or t.error for t in spans):
        return spans
    return message_tool_results(calls) or spans


def trace_tool_results(trace: Trace) -> list[ToolEvidence]:
    return tool_results(trace.get_tool_calls(), trace.get_llm_calls())


def response_text(call: LLMSpan, max_chars: int) -> str | None:
    """An LLM call's output: its text, then the tool calls it requested (None when neither was recorded)."""
    parts = [call.response] if answer_of(call.response) else []
    if call.tool_calls:
        share = item_share(max_chars, len(call.tool_calls))
        requested = [f"- {c.name}({clip(as_text(c.arguments) or '', share)})" for c in call.tool_calls]
        parts.append("requested tool calls:\n" + "\n".join(requested))
    return "\n\n".join(p for p in parts if p) or None


def response_skip(call: LLMSpan, needs_text: bool = True) -> EvalResult | None:
    """The skip for a call with nothing to judge: `not_applicable` when it only requested tools (and the
    judge reads text), `no_data` when no output was recorded; None when there is something to judge."""
    if answer_of(call.response):
        return None
    if call.tool_calls:
        if needs_text:
            return EvalResult.skip(SkipReason.NOT_APPLICABLE, "the call only requested tool calls: no text to judge")
        return None
    return EvalResult.skip(SkipReason.NO_DATA, "the call recorded no response")


def conversation_of(call: LLMSpan) -> list[Any]:
    """The call's input messages without system messages (those go in their own block)."""
    return [m for m in call.messages if not isinstance(m, SystemMessage)]


def _step_line(step: Span, share: int) -> str:
    if isinstance(step, LLMSpan):
        said = clip(step.response or "", share)
        calls = ", ".join(f"{c.name}({clip(as_text(c.arguments) or '', share // 2)})" for c in step.tool_calls)
        parts = [said, f"requests tool calls: {calls}" if calls else ""]
        return "[model] " + ("\n  ".join(p for p in parts if p) or "(no output recorded)")
    if isinstance(step, ToolSpan):
        result = as_text(step.result)
        line = f"[tool] {step.name}({clip(as_text(step.arguments) or '', share // 2)})"
        line += f"\n  result: {clip(result, share)}" if result is not None else ""
        return line + (f"\n  error: {clip(step.error, share // 2)}" if step.error else "")
    return f"[{step.span_name}]"


def trajectory_text(steps: Sequence[Span], max_chars: int) -> str | None:
    """An agent's steps in order: model turns (text, requested tools) and tool executions (result, error)."""
    if not steps:
        return None
    share = item_share(max_chars, len(steps))
    return "\n".join(f"{n}. {_step_line(step, share)}" for n, step in enumerate(steps, start=1))


def agent_instructions(agent: AgentTrace) -> str | None:
    return system_instructions(agent.llm_steps)


def agent_label(agent: AgentTrace) -> str:
    return f"agent {agent.agent_name!r}" if agent.agent_name else "the agent"


def retrievals_text(retrievals: Sequence[RetrieverSpan], max_chars: int) -> str | None:
    """Each retrieval's query and numbered documents: `retrieval N` / `query: ...` / `[document M] ...`."""
    judged = [r for r in retrievals if r.documents]
    if not judged:
        return None
    share = item_share(max_chars, len(judged))
    entries = []
    for number, retrieval in enumerate(judged, start=1):
        query = clip(retrieval.query, share // 4) if retrieval.query else NOT_RECORDED
        entries.append(f"retrieval {number}\nquery: {query}\n{format_documents(retrieval.documents, share)}")
    return "\n\n".join(entries)


def has_document_content(retrievals: Sequence[RetrieverSpan]) -> bool:
    return any(doc.content and doc.content.strip() for r in retrievals for doc in r.documents)
