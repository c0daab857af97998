"""The Session view: the turns of one conversation, each turn one trace, in start order.

A `Turn` is a bounded summary of its trace (what the user said that turn, the answer, the tools, the errors, the
tokens and cost), so a session keeps no spans: the daemon holds open sessions for minutes and may share their
turns between replicas through the result store. `Turn.from_trace` builds one from a Trace.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from evaluators.signatures.span_failures import first_cause, span_error, span_step

if TYPE_CHECKING:
    from evaluators.pricing import CallCost, ModelPrice
    from evaluators.traces.model import LLMSpan, Trace
    from evaluators.traces.spans import Span

__all__ = ["MAX_TURN_TEXT", "Ending", "Session", "Turn", "TurnError"]

MAX_TURN_TEXT = 2000  # characters a turn keeps of the user's message and of the answer (the judges read 1500)
Ending = Literal["open", "idle", "explicit_end", "cut"]


@functools.cache
def _call_cost() -> Callable[[LLMSpan, Mapping[str, ModelPrice] | None], CallCost | None]:
    """`evaluators.pricing.call_cost`, imported when the first turn is built (the price table is loaded then, not
    by importing sessions), and then at the cost of a call (an import statement per turn costs a microsecond)."""
    from evaluators.pricing import call_cost

    return call_cost


def _bounded(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TURN_TEXT:
        return text
    return text[: MAX_TURN_TEXT - 1] + "…"


def _turn_error(span: Span) -> TurnError:
    """A failed span as a turn's error: its step and its error typed as `span_error` types it (error_free's
    vocabulary, so the session rules and the trace rules name one failure alike)."""
    step, name = span_step(span)
    error_type, message = span_error(span)
    return TurnError(step if step != "trace" else str(span.kind), name or "", message, error_type)


def _failed_spans(trace: Trace) -> tuple[TurnError, ...]:
    """The trace's failed spans as turn errors, the error's origin first (as error_free states it)."""
    failed = [span for span in trace.spans if span.has_error]
    if not failed:
        return ()
    cause = first_cause(failed, trace.spans)
    return tuple(_turn_error(span) for span in [cause, *(s for s in failed if s is not cause)])


@dataclass(frozen=True, slots=True)
class TurnError:
    """A span of the turn that failed: its step kind (llm, tool, agent, ...) and name (as a failure names them:
    a tool's name, an LLM call's provider), and its error's message and type read as the trace rules read them
    (`span_error`: `http_503`, an exception type, `error`), so a session rule types a failure as they do."""

    kind: str
    name: str
    message: str
    error_type: str = ""  # "" in turns stored before the type was kept


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation: one trace.

    `user_message`: what the user said in this turn (the latest user message when the model's request carries the
    whole history); `answer`: the agent's final answer ("" recorded empty, None not recorded).
    """

    trace_id: str
    start_ns: int
    end_ns: int
    user_message: str | None
    answer: str | None
    tool_calls: tuple[str, ...] = ()
    errors: tuple[TurnError, ...] = ()
    agents: tuple[str, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: no call of the turn could be priced
    service: str = ""

    @property
    def has_error(self) -> bool:
        return bool(self.errors)

    @property
    def answered(self) -> bool:
        return bool(self.answer and self.answer.strip())

    @property
    def duration_ms(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e6

    @classmethod
    def from_trace(cls, trace: Trace, prices: Mapping[str, ModelPrice] | None = None) -> Turn:
        """The turn `trace` is: its user message, answer, tools, failed spans (the first error's origin first, read
        as the trace rules read them), tokens and cost."""
        call_cost = _call_cost()
        metrics = trace.metrics  # the trace path computed these: tokens, the error count, the time window
        usage = metrics.token_usage
        calls = trace.get_llm_calls()
        costs = [c for c in (call_cost(call, prices) for call in calls) if c is not None]  # priced once per span
        errors = _failed_spans(trace) if metrics.error_count else ()  # the error's origin first
        return cls(
            trace_id=trace.trace_id,
            start_ns=trace.start_time,
            end_ns=trace.end_time,
            user_message=_bounded(trace.input),  # the turn's own message (Trace.input)
            answer=_bounded(trace.output),
            tool_calls=tuple([t.name for t in trace.get_tool_calls()]),
            errors=errors,
            agents=tuple(trace.agent_names),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=sum([c.usd for c in costs]) if costs else None,
            service=trace.service_name or "",
        )


@dataclass(slots=True)
class Session:
    """The turns of one conversation, in start order.

    `source`: the attribute its id came from (`session.id`, `gen_ai.conversation.id`, ... or a configured one);
    `ended`: `open` while turns may still come, `idle` after the idle time with no new turn, `explicit_end` at a
    convention's end marker, `cut` when a limit closed it (`max_turns`, `max_open_sessions`).
    """

    session_id: str
    turns: list[Turn] = field(default_factory=list)
    source: str = ""
    ended: Ending = "open"
    turns_cut: int = 0  # turns left out by `max_turns`
    completed_at: float | None = None  # epoch seconds when the daemon completed it (None: not completed there)

    def __post_init__(self) -> None:
        self.turns.sort(key=lambda t: (t.start_ns, t.trace_id))

    @property
    def service(self) -> str:
        return next((t.service for t in self.turns if t.service), "")

    @property
    def trace_ids(self) -> list[str]:
        return [t.trace_id for t in self.turns]

    @property
    def user_messages(self) -> list[str]:
        """What the user said, turn by turn (turns without a recorded message left out)."""
        return [t.user_message for t in self.turns if t.user_message]

    @property
    def start_ns(self) -> int:
        return self.turns[0].start_ns if self.turns else 0

    @property
    def end_ns(self) -> int:
        return max((t.end_ns for t in self.turns), default=0)

    @property
    def duration_ms(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e6

    @property
    def total_tokens(self) -> int:
        return sum(t.input_tokens + t.output_tokens for t in self.turns)

    @property
    def cost_usd(self) -> float | None:
        costs = [t.cost_usd for t in self.turns if t.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def last_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def add(self, turn: Turn) -> None:
        """Add a turn in start order (turns may arrive out of order)."""
        self.turns.append(turn)
        self.turns.sort(key=lambda t: (t.start_ns, t.trace_id))

    @classmethod
    def of(cls, session_id: str, turns: Sequence[Turn], source: str = "", ended: Ending = "idle") -> Session:
        return cls(session_id, list(turns), source, ended)
