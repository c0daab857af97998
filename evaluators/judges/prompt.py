"""Prompt pieces for LLM judges: bounded, escaped data blocks, then the question.

Every piece of the system under evaluation (user input, answers, tool results, documents, instructions)
goes into a `<data name="...">` block. Its content cannot open or close a block (`<data` and `</data`
inside are written `&lt;data`, `&lt;/data`, in any case and spacing), so text an agent produced can never
pose as the judge's own instructions. Each block holds at most `max_chars` characters of content and
ends with a `[truncated: ...]` marker when it was cut; a prompt is a few blocks and a short question,
so its size is bounded by the number of blocks × `max_chars`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..traces.messages import AssistantMessage, Message, RetrievedDocument, ToolMessage

# "<" that would start a data tag: "<data", "</data", "< / DATA", ...
_DATA_TAG = re.compile(r"<(?=\s*/?\s*data)", re.IGNORECASE)
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.:/ -]+")
MAX_NAME_CHARS = 80
# Each item of a list (message, tool call, document) gets an equal share of its block, but at least this.
MIN_ITEM_CHARS = 300
NOT_RECORDED = "(not recorded)"
EMPTY = "(empty)"


def escape_data(text: str) -> str:
    """`text` with every `<data` / `</data` (any case, any spacing) made harmless: its `<` becomes `&lt;`."""
    return _DATA_TAG.sub("&lt;", text)


def truncation_marker(shown: int, total: int, tail: bool = False) -> str:
    where = "the last " if tail else ""
    return f"[truncated: showing {where}{shown} of {total} characters]"


def clip(text: str, max_chars: int, *, tail: bool = False) -> str:
    """`text` cut to `max_chars` characters, with a truncation marker after (or, keeping the tail, before) it."""
    limit = max(int(max_chars), 0)
    if len(text) <= limit:
        return text
    marker = truncation_marker(limit, len(text), tail)
    return f"{marker}\n{text[len(text) - limit :]}" if tail else f"{text[:limit]}\n{marker}"


def block_name(name: str) -> str:
    """A block name safe inside the quotes of `name="..."` (letters, digits, `_.:/ -`; bounded)."""
    cleaned = _UNSAFE_NAME.sub("_", str(name)).strip() or "data"
    return cleaned[:MAX_NAME_CHARS]


def data_block(name: str, text: str | None, max_chars: int, *, tail: bool = False) -> str:
    """`<data name="...">` + the escaped `text` (at most `max_chars` characters, marked when cut) + `</data>`.

    None renders as "(not recorded)", blank text as "(empty)". `tail=True` keeps the end of a long text
    (for conversations, where the latest turns matter most) instead of its start.
    """
    if text is None:
        body = NOT_RECORDED
    elif not text.strip():
        body = EMPTY
    else:
        body = clip(escape_data(text), max_chars, tail=tail)
    return f'<data name="{block_name(name)}">\n{body}\n</data>'


def question(text: str, max_chars: int = 4000) -> str:
    """The question after the data blocks (escaped like data: it may quote configured criteria)."""
    return f"<question>\n{clip(escape_data(text.strip()), max_chars)}\n</question>"


def compose(*sections: str | None) -> str:
    """The prompt: the non-empty sections, separated by blank lines."""
    return "\n\n".join(s for s in sections if s)


# --- values and lists --------------------------------------------------------------------------------


def as_text(value: Any) -> str | None:
    """A recorded value as prompt text: strings as they are, other values as compact JSON; None stays None."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def item_share(max_chars: int, count: int) -> int:
    """Characters each of `count` items of a block may take (an equal share, never below MIN_ITEM_CHARS)."""
    return max(max_chars // max(count, 1), min(max_chars, MIN_ITEM_CHARS))


def _one_line_call(name: str, arguments: Any, limit: int) -> str:
    args = as_text(arguments)
    return f"{name}({clip(args, limit) if args is not None else ''})"


def format_messages(messages: Sequence[Message], max_chars: int) -> str:
    """A conversation, one `[role] text` entry per message; assistant tool calls and tool results named."""
    share = item_share(max_chars, len(messages))
    lines = []
    for message in messages:
        if isinstance(message, ToolMessage):
            head = f"[tool result{' ' + message.name if message.name else ''}]"
        else:
            head = f"[{message.role}]"
        text = clip(message.content, share) if message.content else ""
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = ", ".join(_one_line_call(c.name, c.arguments, share) for c in message.tool_calls)
            text = f"{text}\n  requests tool calls: {calls}" if text else f"requests tool calls: {calls}"
        lines.append(f"{head} {text or EMPTY}")
    return "\n".join(lines)


def conversation_block(messages: Sequence[Message], max_chars: int, name: str = "conversation") -> str:
    """A data block of a conversation; a long one keeps its latest turns."""
    text = format_messages(messages, max_chars) if messages else None
    return data_block(name, text, max_chars, tail=True)


@dataclass(frozen=True, slots=True)
class ToolEvidence:
    """One tool call as a judge sees it: name, arguments, result and error (None when not recorded)."""

    name: str
    arguments: Any = None
    result: Any = None
    error: str | None = None


def format_tool_calls(calls: Sequence[ToolEvidence], max_chars: int) -> str:
    """Numbered tool calls with their arguments, then their result and error."""
    share = item_share(max_chars, len(calls))
    entries = []
    for number, call in enumerate(calls, start=1):
        lines = [f"{number}. {_one_line_call(call.name, call.arguments, share // 2)}"]
        result = as_text(call.result)
        if result is not None or not call.error:
            lines.append(f"   result: {clip(result, share) if result is not None else NOT_RECORDED}")
        if call.error:
            lines.append(f"   error: {clip(call.error, share // 2)}")
        entries.append("\n".join(lines))
    return "\n".join(entries)


def tool_calls_block(calls: Sequence[ToolEvidence], max_chars: int, name: str = "tool_calls") -> str:
    return data_block(name, format_tool_calls(calls, max_chars) if calls else None, max_chars)


def format_documents(documents: Sequence[RetrievedDocument], max_chars: int) -> str:
    """Numbered documents: `[document N] id=... score=...` and their content."""
    share = item_share(max_chars, len(documents))
    entries = []
    for number, doc in enumerate(documents, start=1):
        head = f"[document {number}]"
        head += f" id={doc.id}" if doc.id else ""
        head += f" score={doc.score:g}" if doc.score is not None else ""
        entries.append(f"{head}\n{clip(doc.content, share) if doc.content else NOT_RECORDED}")
    return "\n".join(entries)


def documents_block(documents: Sequence[RetrievedDocument], max_chars: int, name: str = "documents") -> str:
    return data_block(name, format_documents(documents, max_chars) if documents else None, max_chars)


def instructions_block(text: str | None, max_chars: int, name: str = "system_instructions") -> str:
    """The system instructions the judged model or agent was given."""
    return data_block(name, text, max_chars)


def tool_definitions_text(tools: Sequence[Any], max_chars: int) -> str | None:
    """Offered tools as `name: description` lines (None when there are none)."""
    if not tools:
        return None
    share = item_share(max_chars, len(tools))
    lines = [f"- {t.name}: {clip(t.description, share) if t.description else '(no description)'}" for t in tools]
    return "\n".join(lines)
