"""What the user said in one turn: the turn's own request, else the latest user message the model was sent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evaluators.traces.messages import UserMessage

if TYPE_CHECKING:
    from evaluators.traces.model import LLMSpan, Trace

__all__ = ["latest_user_message"]


def latest_user_message(trace: Trace, calls: Sequence[LLMSpan] | None = None) -> str | None:
    """The user's message of this turn.

    The root or agent span's input is the turn's own request when a convention records one (OpenInference
    `input.value`, an OTel GenAI `invoke_agent` holding only this turn, Pydantic AI's new messages). When the first
    LLM call's request carries the conversation so far, the turn's message is its last user message: a carrier
    whose text is one of the earlier user messages (an `invoke_agent` or run span that holds the whole history
    and was read from its first user message) gives way to it. `calls`: `trace.get_llm_calls()` when the caller
    has them (in start order).
    """
    if calls is None:
        calls = trace.get_llm_calls()
    for call in calls[:1]:
        users = [m.content for m in call.messages if isinstance(m, UserMessage) and m.content]
        if len(users) > 1:  # the whole history
            carried = _carrier_text(trace)
            if carried is None or (carried in users[:-1] and carried != users[-1]):
                return users[-1]
            return carried
    return trace.input


def _carrier_text(trace: Trace) -> str | None:
    """The turn's input from the root or top agent span only (never from an LLM call's messages)."""
    from evaluators.traces.envelope import envelope_text

    for span in trace._carriers():
        io = span._facet("io")
        text = envelope_text(io[0]) if io else None
        if text:
            return text
    return None
