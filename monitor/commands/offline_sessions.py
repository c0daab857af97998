"""Session-level evaluators in an offline run (`agent-monitor evaluate`, `compare`, `poll`): the traces grouped into
conversations by their session ids, each session-level evaluator run once per conversation.

A session's record carries the last turn's trace id (as the daemon's exemplar does) and, under
`details["session"]`, the session id and every turn's trace id in order, so a report can name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evaluators.judges import LLMJudge
from evaluators.pricing import ModelPrice
from evaluators.sdk import Dispatched, EvalResult, EvaluationRecord, dispatch_session
from evaluators.sessions import Session, group_sessions
from evaluators.traces.model import Trace
from monitor.engine.configured import relabel

if TYPE_CHECKING:
    from monitor.commands.offline_spec import Selected  # offline_spec imports offline_judges, which imports this

SESSION_KEY = "session"  # the details key a session record's session id and turns' trace ids go under


def is_session_level(chosen: Selected) -> bool:
    return str(chosen.evaluator.level) == "session"


def evaluate_sessions(
    traces: Sequence[Trace],
    selection: Sequence[Selected],
    prices: Mapping[str, ModelPrice] | None = None,
) -> tuple[int | None, dict[str, list[EvaluationRecord]]]:
    """(how many sessions the traces hold, the session-level rules' records by label); the count is None when no
    session-level evaluator is selected (the traces are then not grouped). Traces without a session id belong to
    none. Session judges go through the judge engine with the trace judges (`offline_judges.run_judges`)."""
    if not any(is_session_level(s) for s in selection):
        return None, {}
    sessions = group_sessions(traces, prices=prices)
    chosen = [s for s in selection if is_session_level(s) and not isinstance(s.evaluator, LLMJudge)]
    by_label: dict[str, list[EvaluationRecord]] = {s.label: [] for s in chosen}
    for session in sessions:
        for selected in chosen:
            for dispatched in dispatch_session(session, [selected.evaluator]):
                by_label[selected.label].append(relabel(_record(session, dispatched), selected.label))
    return len(sessions), by_label


def _record(session: Session, dispatched: Dispatched) -> EvaluationRecord:
    return session_record(session, dispatched.evaluator.name, dispatched.result, dispatched.duration_ms)


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
