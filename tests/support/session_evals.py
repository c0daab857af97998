"""Scripted session-level evaluators for the tests (the unit tests build them; the daemon test loads them by module
path). Each takes a `Session` (the type hint makes it session-level)."""

from __future__ import annotations

from evaluators import EvalResult, evaluator
from evaluators.sessions import Session

HANDOFF_TOOL = "request_human_agent"


@evaluator("no_handoff", threshold=1.0)
def no_handoff(session: Session) -> EvalResult:
    """Fails when a turn handed the conversation to a human (called `request_human_agent`)."""
    turns = [i for i, turn in enumerate(session.turns, 1) if HANDOFF_TOOL in turn.tool_calls]
    details = {"turns": len(session.turns), "ended": session.ended, "trace_ids": session.trace_ids}
    if turns:
        return EvalResult(0.0, explanation=f"handed over to a human at turn {turns[0]}", details=details)
    return EvalResult(1.0, explanation=f"{len(session.turns)} turns without a handoff", details=details)


@evaluator("session_errors", threshold=1.0)
def session_errors(session: Session) -> EvalResult:
    """The share of turns without a failing span."""
    if not session.turns:
        return EvalResult.skip("no_data", "no turns")
    clean = sum(not turn.has_error for turn in session.turns)
    return EvalResult(clean / len(session.turns), explanation=f"{len(session.turns) - clean} turns with errors")


@evaluator("session_boom")
def session_boom(session: Session) -> EvalResult:
    """Raises: the runner turns it into an error skip."""
    raise RuntimeError(f"boom on {session.session_id}")
