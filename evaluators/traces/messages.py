"""Typed messages, tool calls, tool definitions and documents: the normalized content model."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ToolCall:
    """A tool call the model asked for. `arguments` is parsed JSON when possible, else the raw string."""

    name: str
    arguments: Any = None
    id: str | None = None
    arguments_error: str | None = None  # why the raw arguments string is not valid JSON


@dataclass
class ToolDefinition:
    """A tool offered to the model or agent: name, description, JSON-schema parameters."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


@dataclass
class Message:
    role: str
    content: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SystemMessage(Message):
    role: str = "system"


@dataclass
class UserMessage(Message):
    role: str = "user"


@dataclass
class AssistantMessage(Message):
    role: str = "assistant"
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class ToolMessage(Message):
    """A tool result fed back to the model (role `tool`, or a `user` message carrying results)."""

    role: str = "tool"
    tool_call_id: str | None = None
    name: str | None = None


@dataclass
class RetrievedDocument:
    id: str | None = None
    content: str | None = None
    score: float | None = None
    metadata: dict[str, Any] | None = None


@dataclass
class LLMOutput:
    """What one LLM call produced."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)


# What instrumentations write in place of content they were told not to capture.
PLACEHOLDER_TEXTS = frozenset({"<elided>"})


def is_placeholder(value: Any) -> bool:
    """True for a content value that only stands in for content not captured."""
    return isinstance(value, str) and value.strip() in PLACEHOLDER_TEXTS


_ROLE_ALIASES = {
    "model": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "human": "user",
    "function": "tool",
    "tool-call": "assistant",  # smolagents: the assistant's "Calling tools: ..." turn
    "tool-response": "tool",  # smolagents: the "Observation: ..." a tool returned (sent to the model as user)
}


# Roles that normalize to themselves, looked up before the string work (this runs for every message parsed).
_CANONICAL_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def normalize_role(role: Any) -> str:
    if type(role) is str and role in _CANONICAL_ROLES:
        return role
    text = str(role or "").strip().lower()
    return _ROLE_ALIASES.get(text, text or "user")


def make_message(
    role: Any,
    content: str = "",
    tool_calls: list[ToolCall] | None = None,
    tool_call_id: str | None = None,
    name: str | None = None,
) -> Message:
    """The right Message subclass for a role; unknown roles become a plain Message."""
    norm = normalize_role(role)
    if norm == "system" or norm == "developer":
        return SystemMessage(content=content)
    if norm == "assistant":
        return AssistantMessage(content=content, tool_calls=tool_calls or [])
    if norm == "tool":
        return ToolMessage(content=content, tool_call_id=tool_call_id, name=name)
    if norm == "user":
        return UserMessage(content=content)
    return Message(role=norm, content=content)
