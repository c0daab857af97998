"""The record of a result on a whole conversation (offline runs): the last turn's trace id as its trace, and under
`details["session"]` the session id and every turn's trace id in order, so a report can name them."""

from __future__ import annotations

from evaluators.sdk import EvalResult, EvaluationRecord
from evaluators.sessions import Session

SESSION_KEY = "session"  # the details key a session record's session id and turns' trace ids go under


def session_record(session: Session, evaluator: str, result: EvalResult, duration_ms: float) -> EvaluationRecord:
    """The record of one result on `session`: the last turn's trace id, the session under `details["session"]`."""
    last = session.last_turn
    details = {**result.details, SESSION_KEY: {"id": session.session_id, "trace_ids": session.trace_ids}}
    return EvaluationRecord.model_construct(
        trace_id=last.trace_id if last is not None else session.session_id,
        evaluator=evaluator,
        level="session",
        span_id=None,
        agent_name=None,
        model=None,
        service=session.service or None,
        task_id=None,
        score=result.score,
        passed=result.passed,
        skipped=result.is_skipped,
        skip_reason=result.skip_reason,
        explanation=result.explanation,
        details=details,
        duration_ms=duration_ms,
        failure=result.failure,
    )


def session_of_record(record: EvaluationRecord) -> tuple[str, list[str]] | None:
    """(session id, its turns' trace ids) of a session-level record; None for any other record."""
    info = record.details.get(SESSION_KEY) if record.level == "session" else None
    if not isinstance(info, dict):
        return None
    return str(info.get("id", "")), [str(t) for t in info.get("trace_ids", [])]
