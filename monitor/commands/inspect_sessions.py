"""`agent-monitor inspect`: the sessions (conversations) found in the files, as text or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluators.sessions import Session, Turn, group_sessions
from evaluators.traces.model import Trace
from monitor.text import clip, shown, usd


def sessions_of(traces: Sequence[Trace], extra_attributes: Sequence[str] = ()) -> list[Session]:
    """The sessions of `traces` (offline: each complete), first turn first."""
    return group_sessions(traces, extra_attributes)


def turn_dict(index: int, turn: Turn) -> dict[str, Any]:
    return {
        "turn": index,
        "trace_id": turn.trace_id,
        "start_time_unix_nano": turn.start_ns,
        "duration_ms": round(turn.duration_ms, 3),
        "user_message": turn.user_message,
        "answer": turn.answer,
        "tool_calls": list(turn.tool_calls),
        "errors": [{"kind": e.kind, "name": e.name, "message": e.message} for e in turn.errors],
        "agents": list(turn.agents),
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "cost_usd": turn.cost_usd,
    }


def session_dict(session: Session) -> dict[str, Any]:
    """One session as JSON-ready data: id, source, totals and its turns in order."""
    return {
        "session_id": session.session_id,
        "source": session.source,
        "service": session.service,
        "ended": session.ended,
        "turn_count": len(session.turns),
        "trace_ids": session.trace_ids,
        "start_time_unix_nano": session.start_ns,
        "duration_ms": round(session.duration_ms, 3),
        "input_tokens": sum(t.input_tokens for t in session.turns),
        "output_tokens": sum(t.output_tokens for t in session.turns),
        "total_tokens": session.total_tokens,
        "cost_usd": session.cost_usd,
        "turns": [turn_dict(i, t) for i, t in enumerate(session.turns, start=1)],
    }


def render_session(session: Session, width: int = 80) -> str:
    """A session as text: its header, then each turn's trace, user message, answer, tools and errors."""
    inputs = sum(t.input_tokens for t in session.turns)
    outputs = sum(t.output_tokens for t in session.turns)
    lines = [
        f"session {clip(session.session_id, 80)}  source={session.source}  "
        f"service={clip(session.service, 40) or '?'}  turns={len(session.turns)}  {session.duration_ms:.0f}ms  "
        f"tokens={inputs}→{outputs} (total {session.total_tokens})  cost={usd(session.cost_usd)}"
    ]
    for index, turn in enumerate(session.turns, start=1):
        lines.append(
            f"  turn {index}  trace {turn.trace_id}  {turn.duration_ms:.0f}ms  "
            f"tokens={turn.input_tokens}→{turn.output_tokens}  cost={usd(turn.cost_usd)}"
        )
        lines.append(f"    user:   {shown(turn.user_message, width)}")
        lines.append(f"    answer: {shown(turn.answer, width)}")
        if turn.tool_calls:
            lines.append(f"    tools:  {', '.join(clip(name, 40) for name in turn.tool_calls)}")
        for error in turn.errors:
            lines.append(f"    error:  {error.kind} {clip(error.name, 40)}: {clip(error.message, width)}")
    return "\n".join(lines)
