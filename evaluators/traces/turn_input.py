"""Which text is a turn's own request, and which rule chose it (`Trace.input`, `AgentTrace.input`).

Frameworks that keep a conversation (ADK, the OpenAI Agents SDK, LangGraph, Pydantic AI, OTel GenAI
multi-turn...) resend the history with every request, so the first user message of the first LLM request is
turn 1's question on every turn. One rule, for traces, agents and conversations alike:

1. A carrier span (the root, else the top agent span; for an agent, its agent spans) that records a request
   gives it; an envelope holding a whole message list gives its latest user message (`envelope_text`).
2. When the first LLM request carries the history (more than one user message), its latest user message is the
   turn's question, unless the carrier recorded exactly that one; a carrier whose text is one of the earlier
   user messages (an envelope read from turn 1) gives way to it.
3. Without a carrier, the latest user message of the first LLM request that has one.

Tool results sent with role "user" (ADK/Gemini, Pydantic AI before format v6) are ToolMessages, never user
messages, so they are never the question. Nor is what Google ADK relays to an agent of what another agent said or
did: ADK sends it with role "user", opened by "For context:" and either "[<agent>] said/called tool/..." (1.x) or
"below is a transcript of what another agent did" (2.x).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from .envelope import envelope_text
from .messages import UserMessage

if TYPE_CHECKING:
    from .spans import LLMSpan, Span

__all__ = ["InputSource", "turn_input", "user_messages"]

# Google ADK's relay of another agent's events (contents.py `_present_other_agent_message`), sent as a user message
_ADK_RELAYED = re.compile(r"For context:\s*(?:\[[^\]\n]{1,200}\] |below is a transcript of what another agent did)")


class InputSource(StrEnum):
    """The rule that chose a trace's (or an agent's) input."""

    ROOT = "root span input"
    AGENT = "agent span input"
    LATEST_USER_MESSAGE = "latest user message of the first LLM request"  # the request carried the history
    LLM_REQUEST = "user message of the first LLM request"  # no carrier recorded the request


def user_messages(call: LLMSpan) -> list[str]:
    """The user's text messages of one LLM request, in the order sent (tool results are not among them)."""
    return [
        m.content
        for m in call.messages
        if isinstance(m, UserMessage) and m.content and not _ADK_RELAYED.match(m.content)
    ]


def carried_input(carriers: Sequence[tuple[Span, InputSource]]) -> tuple[str, InputSource] | None:
    """The first request a carrier span records as text, with the carrier's source."""
    for span, source in carriers:
        io = span._facet("io")
        text = envelope_text(io[0]) if io else None
        if text:
            return text, source
    return None


def turn_input(
    carriers: Sequence[tuple[Span, InputSource]], calls: Sequence[LLMSpan]
) -> tuple[str | None, InputSource | None]:
    """(the turn's own request, the rule that chose it); (None, None) when nothing records one.

    `carriers`: the spans that may record the request, best first, each with its source; `calls`: the LLM calls
    in start order."""
    carried = carried_input(carriers)
    for call in calls[:1]:
        users = user_messages(call)
        if len(users) > 1:  # the request carries the conversation so far
            if carried is None or (carried[0] in users[:-1] and carried[0] != users[-1]):
                return users[-1], InputSource.LATEST_USER_MESSAGE
            return carried
    if carried is not None:
        return carried
    for call in calls:
        users = user_messages(call)
        if users:
            return users[-1], InputSource.LLM_REQUEST
    return None, None
