"""The public trace views: Trace and AgentTrace (span views live in `spans`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .conventions.base import TokenUsage
from .envelope import envelope_text
from .jsonutil import parse_json
from .messages import ToolDefinition
from .spans import (
    AgentSpan,
    Handoff,
    HandoffSpan,
    LLMMetrics,
    LLMSpan,
    RetrieverSpan,
    Span,
    ToolSpan,
    answer_order,
)
from .turn_input import InputSource, turn_input


@dataclass
class TraceMetrics:
    total_duration_ms: float = 0.0
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    error_count: int = 0
    llm_call_count: int = 0
    tool_call_count: int = 0
    agent_count: int = 0
    cost: float | None = None

    @property
    def has_errors(self) -> bool:
        return self.error_count > 0


def _usage_of(calls: list[LLMSpan]) -> TokenUsage:
    total = TokenUsage()
    for call in calls:
        if call.usage is not None:
            total = total + call.usage
    return total


def _cost_of(calls: list[LLMSpan]) -> float | None:
    costs = [c.metrics.cost for c in calls if c.metrics.cost is not None]
    return sum(costs) if costs else None


def _is_blank_text(raw: Any) -> bool:
    """True for an answer recorded as empty text: `""`, whitespace, or a JSON-encoded blank string."""
    return isinstance(raw, str) and isinstance(value := parse_json(raw), str) and not value.strip()


def _answered_empty(call: LLMSpan) -> bool:
    """True when the call's output was recorded and holds no text, no tool calls and no output tokens.

    Output tokens without text mean the content was not captured: that is no answer, not an empty one.
    """
    if call.response is not None and call.response.strip():
        return False
    recorded = call._facet("output") is not None or call.metrics.has_usage
    return recorded and not call.tool_calls and not call.metrics.output_tokens


def _repeats_its_parent(tool: ToolSpan, tools: dict[str, ToolSpan]) -> bool:
    """True for a tool span directly under a tool span of the same tool: one execution recorded twice (OpenInference's
    autogen-agentchat TOOL span around AutoGen's native `execute_tool`), counted once, as the outer span."""
    parent = tools.get(tool.parent_span_id)
    return parent is not None and parent.name == tool.name


def _span_window_ms(spans: list[Span]) -> float:
    starts = [s.start_time for s in spans if s.start_time > 0]
    ends = [s.end_time for s in spans if s.end_time > 0]
    if not starts or not ends or max(ends) < min(starts):
        return 0.0
    return (max(ends) - min(starts)) / 1e6


def _merge_tools(groups: list[list[ToolDefinition]]) -> list[ToolDefinition]:
    seen: dict[str, ToolDefinition] = {}
    for tools in groups:
        for tool in tools:
            seen.setdefault(tool.name, tool)
    return list(seen.values())


class AgentTrace:
    """What one agent did in a trace: its steps in order (think → act → observe)."""

    def __init__(self, trace: Trace, agent_name: str | None, agent_spans: list[AgentSpan], steps: list[Span]):
        self.trace = trace
        self.agent_name = agent_name
        self.agent_spans = agent_spans
        self.steps = steps

    @property
    def trace_id(self) -> str:
        return self.trace.trace_id

    @property
    def agent_span(self) -> AgentSpan | None:
        return self.agent_spans[0] if self.agent_spans else None

    @property
    def agent_span_id(self) -> str | None:
        return self.agent_span.span_id if self.agent_span else None

    @property
    def description(self) -> str | None:
        return self.agent_span.description if self.agent_span else None

    @cached_property
    def llm_steps(self) -> list[LLMSpan]:
        return [s for s in self.steps if isinstance(s, LLMSpan)]

    @cached_property
    def tool_steps(self) -> list[ToolSpan]:
        return [s for s in self.steps if type(s) is ToolSpan]

    @property
    def tool_names_used(self) -> list[str]:
        return [t.name for t in self.tool_steps]

    @cached_property
    def available_tools(self) -> list[ToolDefinition]:
        groups = [a.available_tools for a in self.agent_spans] + [c.available_tools for c in self.llm_steps]
        return _merge_tools(groups)

    @property
    def has_errors(self) -> bool:
        return any(s.has_error for s in self.steps) or any(a.has_error for a in self.agent_spans)

    @cached_property
    def _input(self) -> tuple[str | None, InputSource | None]:
        return turn_input([(a, InputSource.AGENT) for a in self.agent_spans], self.llm_steps)

    @property
    def input(self) -> str | None:
        """This agent's request in this turn (the rule: `turn_input`)."""
        return self._input[0]

    @property
    def input_source(self) -> InputSource | None:
        """Which rule chose `input` (None when there is none)."""
        return self._input[1]

    @cached_property
    def output(self) -> str | None:
        for agent in reversed(self.agent_spans):
            text = envelope_text(agent.output, output=True)
            if text:
                return text
        calls = sorted(self.llm_steps, key=answer_order)
        return calls[-1].response if calls else None

    @cached_property
    def metrics(self) -> TraceMetrics:
        spans: list[Span] = [*self.agent_spans, *self.steps]
        return TraceMetrics(
            total_duration_ms=_span_window_ms(spans),
            token_usage=_usage_of(self.llm_steps),
            error_count=sum(1 for s in spans if s.has_error),
            llm_call_count=len(self.llm_steps),
            tool_call_count=len(self.tool_steps),
            agent_count=1 if self.agent_name else 0,
            cost=_cost_of(self.llm_steps),
        )

    def __repr__(self) -> str:
        return f"<AgentTrace {self.agent_name!r} steps={len(self.steps)}>"


class Trace:
    """One reassembled trace with its normalized views. Built by `build_trace`."""

    def __init__(self, trace_id: str, spans: list[Span], roots: list[Span], wrappers: set[str]):
        self.trace_id = trace_id
        self.spans = spans
        self.roots = roots
        self._wrapper_llm_ids = wrappers

    def release(self) -> None:
        """Break the reference cycles among this trace's views (an AgentTrace points back at its trace, a tool
        call's join at the LLM calls that point at it), so that reference counting frees them all as soon as the
        trace is dropped: left to the garbage collector, a process evaluating many traces spends a tenth of its
        time walking them. The trace and its views are unusable after it."""
        for span in self.spans:
            span.__dict__.clear()
        self.__dict__.clear()

    # --- identity -----------------------------------------------------------------------------
    @property
    def root(self) -> Span | None:
        return self.roots[0] if self.roots else None

    @property
    def resource_attributes(self) -> dict[str, Any]:
        return self.root.record.resource_attributes if self.root else {}

    @property
    def service_name(self) -> str:
        return self.root.record.service_name if self.root else ""

    @cached_property
    def _window(self) -> tuple[int, int]:
        """(the earliest start time > 0, else 0; the latest end time, else 0) in one pass over the spans: the
        metrics' duration needs them, and a session's turn then reads them for nothing."""
        start = end = 0
        first = True
        for span in self.spans:
            record = span.record
            began = record.start_time_unix_nano
            if began > 0 and (start == 0 or began < start):
                start = began
            ended = record.end_time_unix_nano
            if first or ended > end:
                end, first = ended, False
        return start, end

    @property
    def start_time(self) -> int:
        return self._window[0]

    @property
    def end_time(self) -> int:
        return self._window[1]

    @property
    def span_count(self) -> int:
        return len(self.spans)

    # --- steps --------------------------------------------------------------------------------
    @cached_property
    def _llm_calls(self) -> list[LLMSpan]:
        calls = [s for s in self.spans if isinstance(s, LLMSpan) and s.span_id not in self._wrapper_llm_ids]
        return sorted(calls, key=lambda s: s.start_time)

    def get_llm_calls(self) -> list[LLMSpan]:
        """Every real LLM call (wrapper spans that repeat a child call are left out), by start time."""
        return list(self._llm_calls)

    @cached_property
    def _tool_calls(self) -> list[ToolSpan]:
        tools = {s.span_id: s for s in self.spans if type(s) is ToolSpan}
        return sorted((t for t in tools.values() if not _repeats_its_parent(t, tools)), key=lambda s: s.start_time)

    def get_tool_calls(self) -> list[ToolSpan]:
        """Tool executions by start time; handoffs between agents are not tool calls."""
        return list(self._tool_calls)

    def get_retrievals(self) -> list[RetrieverSpan]:
        """Retrievals by start time. A retriever span without documents directly inside one with documents is
        the same retrieval's inner step (LlamaIndex `retrieve` around `_retrieve`) and is left out."""
        spans = [s for s in self.spans if isinstance(s, RetrieverSpan)]
        with_documents = {s.span_id for s in spans if s.documents}
        kept = [s for s in spans if s.documents or s.parent_span_id not in with_documents]
        return sorted(kept, key=lambda s: s.start_time)

    def get_agents(self) -> list[AgentSpan]:
        return [s for s in self.spans if isinstance(s, AgentSpan)]

    @cached_property
    def _agent_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.name for a in self.get_agents()))

    @property
    def agent_names(self) -> list[str]:
        """The agents' names, each once, in span order."""
        return list(self._agent_names)

    @cached_property
    def handoffs(self) -> list[Handoff]:
        spans = sorted((s for s in self.spans if isinstance(s, HandoffSpan)), key=lambda s: s.start_time)
        return [Handoff(from_agent=s.agent_name, to_agent=s.to_agent, span_id=s.span_id) for s in spans]

    @cached_property
    def _agent_traces(self) -> list[AgentTrace]:
        agents: dict[str, list[AgentSpan]] = {}
        for agent in self.get_agents():
            agents.setdefault(agent.name, []).append(agent)
        steps = sorted([*self._llm_calls, *self._tool_calls], key=lambda s: s.start_time)
        if not agents:
            return [AgentTrace(self, None, [], steps)] if steps else []
        return [
            AgentTrace(self, name, spans, [s for s in steps if s.agent_name == name]) for name, spans in agents.items()
        ]

    def agent_traces(self) -> list[AgentTrace]:
        """One AgentTrace per agent; a trace with steps but no agent span gets one unnamed AgentTrace."""
        return list(self._agent_traces)

    # --- request and answer -------------------------------------------------------------------
    def _carriers(self) -> list[Span]:
        """Root first, then the top agent span: where the request and answer usually live."""
        carriers: list[Span] = [r for r in self.roots[:1] if not isinstance(r, LLMSpan)]
        agents = self.get_agents()
        if agents and agents[0] not in carriers:
            carriers.append(agents[0])
        return carriers

    @cached_property
    def _input(self) -> tuple[str | None, InputSource | None]:
        root = self.root
        carriers = [(s, InputSource.ROOT if s is root else InputSource.AGENT) for s in self._carriers()]
        return turn_input(carriers, self._llm_calls)

    @property
    def input(self) -> str | None:
        """The user's request of this turn: a carrier span's, else the latest user message of the first LLM
        request when it resends the conversation (the rule: `turn_input`)."""
        return self._input[0]

    @property
    def input_source(self) -> InputSource | None:
        """Which rule chose `input` (None when there is none)."""
        return self._input[1]

    @cached_property
    def output(self) -> str | None:
        """The final answer: "" when it was recorded empty, None when nothing recorded one."""
        blank = False
        for span in self._carriers():
            io = span._facet("io")
            raw = io[1] if io else None
            text = envelope_text(raw, output=True)
            if text:
                return text
            blank = blank or _is_blank_text(raw)
        calls = sorted(self._llm_calls, key=answer_order)
        if calls and calls[-1].response is not None:
            return calls[-1].response
        if blank or (calls and _answered_empty(calls[-1])):
            return ""
        return None

    # --- metrics ------------------------------------------------------------------------------
    @cached_property
    def metrics(self) -> TraceMetrics:
        calls = self._llm_calls
        return TraceMetrics(
            total_duration_ms=self._duration_ms(),
            token_usage=_usage_of(calls),
            error_count=sum(1 for s in self.spans if s.has_error),
            llm_call_count=len(calls),
            tool_call_count=len(self._tool_calls),
            agent_count=len(self._agent_names),
            cost=_cost_of(calls),
        )

    def _duration_ms(self) -> float:
        """From the earliest start to the latest end (as `_span_window_ms`); 0 when either is unknown."""
        start, end = self._window
        return (end - start) / 1e6 if start > 0 and end >= start else 0.0

    @property
    def has_errors(self) -> bool:
        return self.metrics.has_errors

    def error_spans(self) -> list[Span]:
        return [s for s in self.spans if s.has_error]

    def __repr__(self) -> str:
        return f"<Trace {self.trace_id} spans={len(self.spans)}>"


__all__ = [
    "AgentSpan",
    "AgentTrace",
    "Handoff",
    "HandoffSpan",
    "InputSource",
    "LLMMetrics",
    "LLMSpan",
    "RetrieverSpan",
    "Span",
    "ToolSpan",
    "Trace",
    "TraceMetrics",
]
