"""Find the human text inside the JSON envelopes that root and agent spans carry.

Traceloop decorators write `{"args": [...], "kwargs": {...}}`; LangChain/LangGraph write message
state; OpenInference writes request/response JSON in `input.value` / `output.value`; ADK via
OpenInference writes `{"new_message": {"parts": [...]}}` and `{"content": {"parts": [...]}}`; CrewAI via
OpenInference writes a crew's inputs as a dict (`{"topic": "..."}`) and its answer as `{"raw": "...", ...}` beside
the messages that led to it.
"""

from __future__ import annotations

import re
from typing import Any

from .jsonutil import parse_json
from .messages import is_placeholder

MAX_DEPTH = 8
_USER_ROLES = {"user", "human"}
_TEXT_KEYS = (
    "new_message",
    "content",
    "parts",
    "text",
    "input",
    "output",
    "query",
    "question",
    "prompt",
    "answer",
    "final_output",
    "final_result",
    "result",
    "response",
    "message",
    "inputs",
    "outputs",
    "value",
    "task",
)
# A Python object's repr, not text: `StopEvent(result=AgentOutput(...` (LlamaIndex puts these, often cut short
# with "...", in `output.value`), `<Context object at 0x7f...>`.
_OBJECT_REPR = re.compile(r"[A-Z]\w*\((?:\w+=|\)$)|<[\w.]+ object at 0x[0-9a-fA-F]+>$")
# Keys of a run result's own answer text: it beats the message history the result carries beside it (a CrewAI
# TaskOutput's `messages` end with the task prompt when the model answered at once, not with the answer).
_ANSWER_KEYS = ("raw",)


def envelope_text(value: Any, *, output: bool = False) -> str | None:
    """The request (or, with output=True, the answer) a value carries as text, else None."""
    return _text(value, output, 0)


def _text(value: Any, output: bool, depth: int) -> str | None:
    if depth > MAX_DEPTH or value is None:
        return None
    value = parse_json(value)
    if isinstance(value, str):
        text = value.strip()
        return None if is_placeholder(text) or _OBJECT_REPR.match(text) else text or None
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return _from_list(value, output, depth)
    if isinstance(value, dict):
        return _from_dict(value, output, depth)
    return None


def _from_list(items: list, output: bool, depth: int) -> str | None:
    if items and all(isinstance(i, dict) and ("role" in i or "type" in i) and "content" in i for i in items):
        return _from_messages(items, output, depth)
    if not output and any(_is_user_message(i) for i in items):
        # a conversation among other items (Responses API input: function_call / function_call_output items)
        text = _from_messages([i for i in items if isinstance(i, dict)], output, depth)
        if text:
            return text
    for item in reversed(items) if output else items:
        text = _text(item, output, depth + 1)
        if text:
            return text
    return None


def _is_user_message(item: Any) -> bool:
    return isinstance(item, dict) and str(item.get("role") or "").lower() in _USER_ROLES and "content" in item


def _from_messages(messages: list, output: bool, depth: int) -> str | None:
    """The latest user message's text (with output=True, the latest message's): a history's own turn."""
    if output:
        candidates = messages
    else:
        candidates = [m for m in messages if str(m.get("role") or m.get("type") or "").lower() in _USER_ROLES]
    for message in reversed(candidates):
        text = _text(message.get("content"), output, depth + 1)
        if text:
            return text
    return None


def _from_dict(value: dict, output: bool, depth: int) -> str | None:
    if ("args" in value or "kwargs" in value) and set(value) <= {"args", "kwargs"}:
        return _text([value.get("args"), value.get("kwargs")], output, depth + 1)
    if isinstance(value.get("parts"), list):
        parts = [p for p in value["parts"] if isinstance(p, dict)]
        texts = [piece for key in ("text", "content") for p in parts if isinstance(piece := p.get(key), str)]
        if texts:
            return "\n".join(texts)
    for key in _ANSWER_KEYS if output else ():
        if key in value:
            text = _text(value[key], output, depth + 1)
            if text:
                return text
    messages = value.get("messages")
    if isinstance(messages, list) and messages:
        text = _from_messages([m for m in messages if isinstance(m, dict)], output, depth)
        if text:
            return text
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        text = _text(choices[0].get("message") or choices[0].get("text"), output, depth + 1)
        if text:
            return text
    for key in _TEXT_KEYS:
        if key in value:
            text = _text(value[key], output, depth + 1)
            if text:
                return text
    if len(value) == 1:  # one named value, whatever its name (a crew's `{"topic": "..."}`): that text
        (only,) = value.values()
        if isinstance(only, str):
            return _text(only, output, depth + 1)
    return None
