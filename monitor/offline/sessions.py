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
from evaluators.sdk import Dispatched, EvaluationRecord, dispatch_session
from evaluators.sessions import Session, Turn, group_sessions
from evaluators.sessions.ids import session_of
from evaluators.traces.model import Trace
from monitor.engine.configured import relabel
from monitor.engine.turn_wire import TrackedTurn
from monitor.offline.session_records import session_record

if TYPE_CHECKING:
    from monitor.offline.spec import Selected


def is_session_level(chosen: Selected) -> bool:
    return str(chosen.evaluator.level) == "session"


def sessions_for(
    traces: Sequence[Trace],
    selection: Sequence[Selected],
    prices: Mapping[str, ModelPrice] | None = None,
) -> list[Session] | None:
    """The conversations `traces` hold, grouped once for every session-level evaluator (rules and judges); None
    when none is selected (the traces are then not grouped). Traces without a session id belong to none."""
    if not any(is_session_level(s) for s in selection):
        return None
    return group_sessions(traces, prices=prices)


def session_turns(traces: Sequence[Trace], prices: Mapping[str, ModelPrice] | None = None) -> list[TrackedTurn]:
    """The turns of the `traces` that name a session, in trace order (what a worker process sends back)."""
    turns: list[TrackedTurn] = []
    for trace in traces:
        ref = session_of(trace)
        if ref is not None:
            turns.append(TrackedTurn(ref.session_id, ref.source, Turn.from_trace(trace, prices)))
    return turns


def sessions_of_turns(turns: Sequence[TrackedTurn]) -> list[Session]:
    """The sessions `group_sessions` finds, from the traces' `session_turns` (in trace order)."""
    sessions: dict[str, Session] = {}
    for session_id, source, turn in turns:
        session = sessions.get(session_id)
        if session is None:
            session = sessions[session_id] = Session(session_id, [], source, "idle")
        session.add(turn)
    return sorted(sessions.values(), key=lambda s: (s.start_ns, s.session_id))


def evaluate_sessions(
    sessions: Sequence[Session] | None,
    selection: Sequence[Selected],
) -> tuple[int | None, dict[str, list[EvaluationRecord]]]:
    """(how many `sessions` there are, the session-level rules' records by label); the count is None when the
    traces were not grouped (`sessions_for` gave None). Session judges go through the judge engine with the trace
    judges (`judges.run_judges`), over the same sessions."""
    if sessions is None:
        return None, {}
    chosen = [s for s in selection if is_session_level(s) and not isinstance(s.evaluator, LLMJudge)]
    by_label: dict[str, list[EvaluationRecord]] = {s.label: [] for s in chosen}
    for session in sessions:
        for selected in chosen:
            for dispatched in dispatch_session(session, [selected.evaluator]):
                by_label[selected.label].append(relabel(_record(session, dispatched), selected.label))
    return len(sessions), by_label


def _record(session: Session, dispatched: Dispatched) -> EvaluationRecord:
    return session_record(session, dispatched.evaluator.name, dispatched.result, dispatched.duration_ms)
