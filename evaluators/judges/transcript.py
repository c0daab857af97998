"""A session as a judge reads it: the conversation's turns in order, each bounded, the middle elided when long.

Each turn is a numbered entry: the user's message, the tools the agent called and the spans that failed (in brief),
then the agent's answer. A turn keeps at most `turn_chars` characters of the message and of the answer; the
transcript at most `max_chars` in all: when longer, the first turn (where the user usually states the goal) and as
many of the latest turns as fit are kept, with a marker naming the turns left out between them. Turn numbers stay
those of the whole session, so a judge's "turn N" names the session's N-th turn (`Session.turns[N - 1]`).
The text goes into a data block (`transcript_block`), which escapes it like every other judged text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..sessions.model import Session, Turn
from .prompt import EMPTY, NOT_RECORDED, clip, data_block

MAX_TOOLS_LISTED = 10
MAX_ERRORS_LISTED = 3
MAX_ERROR_CHARS = 200
TAIL_SHARE = 0.7  # of the room left after the first and last turns, the share the latest turns get first


def _tools_line(names: Sequence[str]) -> str | None:
    if not names:
        return None
    counts = Counter(names)
    shown = [f"{name} ×{n}" if n > 1 else name for name, n in list(counts.items())[:MAX_TOOLS_LISTED]]
    rest = len(counts) - MAX_TOOLS_LISTED
    return "tools called: " + ", ".join(shown) + (f" (+{rest} more)" if rest > 0 else "")


def _errors_lines(turn: Turn) -> list[str]:
    lines = [
        f"error: {e.kind} {e.name}: {clip(e.message, MAX_ERROR_CHARS) if e.message else '(no message)'}"
        for e in turn.errors[:MAX_ERRORS_LISTED]
    ]
    rest = len(turn.errors) - MAX_ERRORS_LISTED
    if rest > 0:
        lines.append(f"error: (+{rest} more failed spans)")
    return lines


def _said(text: str | None, limit: int) -> str:
    if text is None:
        return NOT_RECORDED
    return clip(text.strip(), limit) if text.strip() else EMPTY


def format_turn(turn: Turn, number: int, total: int, turn_chars: int) -> str:
    """One turn: `[turn N of M]`, the user's message, tools and errors in brief, the agent's answer."""
    lines = [f"[turn {number} of {total}]", f"user: {_said(turn.user_message, turn_chars)}"]
    tools = _tools_line(turn.tool_calls)
    if tools:
        lines.append(tools)
    lines.extend(_errors_lines(turn))
    lines.append(f"agent: {_said(turn.answer, turn_chars)}")
    return "\n".join(lines)


def elided_marker(first: int, last: int, total: int) -> str:
    which = f"turn {first}" if first == last else f"turns {first}-{last}"
    return f"[... {which} of {total} left out to bound the transcript ...]"


def transcript(session: Session, max_chars: int, turn_chars: int) -> str | None:
    """The session's turns as text (None when it has none), at most about `max_chars` characters."""
    turns = session.turns
    total = len(turns)
    if not turns:
        return None
    entries = [format_turn(t, n, total, turn_chars) for n, t in enumerate(turns, start=1)]
    if sum(len(e) + 2 for e in entries) <= max_chars:
        return "\n\n".join(entries)
    return "\n\n".join(_bounded(entries, max_chars))


def _bounded(entries: list[str], max_chars: int) -> list[str]:
    """The first entry, the latest entries that fit, and a marker for the middle (every entry clipped to fit)."""
    total = len(entries)
    marker_room = len(elided_marker(total, total, total)) + 4
    # the first and the last turn are always kept, each clipped to at most a third of the room
    third = max((max_chars - marker_room) // 3, 1)
    first = clip(entries[0], third)
    last = clip(entries[-1], third)
    if total == 1:
        return [clip(entries[0], max_chars)]
    room = max_chars - marker_room - len(first) - len(last) - 4
    tail_room = int(room * TAIL_SHARE)
    tail: list[str] = []
    index = total - 2
    while index >= 1 and len(entries[index]) + 2 <= tail_room:
        tail.insert(0, entries[index])
        tail_room -= len(entries[index]) + 2
        room -= len(entries[index]) + 2
        index -= 1
    head: list[str] = []
    start = 1
    while start <= index and len(entries[start]) + 2 <= room:
        head.append(entries[start])
        room -= len(entries[start]) + 2
        start += 1
    kept = [first, *head]
    if start <= index:  # turns start+1 .. index+1 (1-based) are left out
        kept.append(elided_marker(start + 1, index + 1, total))
    return [*kept, *tail, last]


def transcript_block(session: Session, max_chars: int, turn_chars: int, name: str = "transcript") -> str:
    """The transcript as a data block (escaped; "(not recorded)" without turns)."""
    text = transcript(session, max_chars, turn_chars)
    # the text is bounded here; the block's own limit only guards against a miscount
    return data_block(name, text, max_chars + max_chars // 10)


def session_summary(session: Session) -> str:
    """One line about the session as a whole: its turns, the turns not kept, how it ended."""
    parts = [f"{len(session.turns)} turns"]
    if session.turns_cut:
        parts.append(f"{session.turns_cut} more turns were not kept (the turn limit)")
    parts.append(f"ended: {session.ended}")
    return "; ".join(parts)


__all__ = ["elided_marker", "format_turn", "session_summary", "transcript", "transcript_block"]
