"""Conversations: the Session view (the turns of one conversation, each turn a trace), the session id every
convention writes, and offline grouping of traces into sessions."""

from .grouping import group_sessions
from .ids import SESSION_ATTRIBUTES, SessionRef, session_of
from .model import MAX_TURN_TEXT, Ending, Session, Turn, TurnError

__all__ = [
    "MAX_TURN_TEXT",
    "SESSION_ATTRIBUTES",
    "Ending",
    "Session",
    "SessionRef",
    "Turn",
    "TurnError",
    "group_sessions",
    "session_of",
]
