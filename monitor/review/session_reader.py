"""The conversation reads of the store's review reader (a mixin of `sqlite_reader.StoreReviewReader`, so both
databases answer alike): the sessions list, one session, and the session a trace is a turn of.

A database from before schema version 5 has no sessions: the list is empty, every session unknown. Costs:
`sessions` walks the `sessions` rows newest completed first by their index (`failing` and `evaluator` filter as
it goes: a rare evaluator reads many rows, narrow it with since/until), then reads the page's session-level
results by `results.session_id`; `session` reads one row and its results; `session_of_trace` finds the session
by the trace's session-level results (the last turn's) or else scans the turns of the sessions completed within
a day after the trace was stored (`TURN_LOOKUP_WINDOW`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, or_, select

from monitor.review.cursor import TEXT, TIME, decode_cursor, encode_cursor
from monitor.review.session_models import (
    SessionDetail,
    SessionFilter,
    SessionItem,
    SessionsPage,
    SessionTurn,
    SessionVerdict,
    SessionVerdictBrief,
    StoredTurnError,
    turn_of,
)
from monitor.review.sql import ONE, ZERO, Columns, R
from monitor.store.schema import SESSION_TURN_FIELDS
from monitor.store.statements import Statement, execute
from monitor.store.tables import sessions, traces

MAX_SESSIONS_PAGE = 500
MAX_CURSOR_CHARS = 1024  # a cursor holds a session id (at most 256 characters) and a time
TURN_LOOKUP_WINDOW = 86400.0  # sessions completed this long after a trace was stored are searched for it
_OUTCOMES = {1: "pass", 0: "fail", None: "skip"}
_RANK = {"fail": 0, "skip": 1, "pass": 2}
_S = sessions.alias("s")
_ROW = tuple(
    _S.c[name]
    for name in (
        "session_id", "service", "source", "started_at", "last_turn_at", "completed_at", "ended", "turn_count",
        "turns_cut", "total_tokens", "cost_usd", "failed", "turns",
    )
)  # fmt: skip
_RESULT = tuple(
    R.c[name]
    for name in (
        "session_id", "created_at", "evaluator", "passed", "score", "skip_reason", "explanation", "details", "trace_id",
    )
)  # fmt: skip


def encode_session_cursor(completed_at: float, session_id: str) -> str:
    return encode_cursor([completed_at, session_id])


def decode_session_cursor(cursor: str) -> tuple[float, str]:
    """(completed_at, session_id) of a cursor from `encode_session_cursor`; ValueError for anything else."""
    at, session_id = decode_cursor(cursor, (TIME, TEXT), MAX_CURSOR_CHARS)
    return at, session_id


_FIELDS = ("service", "since", "until", "evaluator")  # of the filter, those that may be unset


def sessions_query(
    where: SessionFilter, after: tuple[float, str] | None, limit: int
) -> tuple[Statement, dict[str, Any]]:
    """(statement, params) of the `sessions` rows matching `where`, after the cursor, newest completed first."""
    fields = frozenset(name for name in _FIELDS if getattr(where, name) is not None)
    params = {name: getattr(where, name) for name in fields}
    if after is not None:
        params.update(at=after[0], after_id=after[1])
    return _sessions(fields, where.failing, after is not None), {**params, "limit": limit}


@lru_cache(maxsize=64)
def _sessions(fields: frozenset[str], failing: bool, after: bool) -> Statement:
    where: list[ColumnElement[bool]] = []
    if "service" in fields:
        where.append(_S.c.service == bindparam("service"))
    if "since" in fields:
        where.append(_S.c.completed_at >= bindparam("since"))
    if "until" in fields:
        where.append(_S.c.completed_at < bindparam("until"))
    if failing:
        where.append(_S.c.failed > ZERO)
    if "evaluator" in fields:
        of_session = [R.c.session_id == _S.c.session_id, R.c.evaluator == bindparam("evaluator")]
        where.append(select(ONE).where(*of_session, *([R.c.passed == ZERO] if failing else [])).exists())
    if after:
        at: ColumnElement[float] = bindparam("at")
        older = and_(_S.c.completed_at == at, _S.c.session_id < bindparam("after_id"))
        where.append(or_(_S.c.completed_at < at, older))
    query = select(*_ROW).where(*where).order_by(_S.c.completed_at.desc(), _S.c.session_id.desc())
    return Statement(query.limit(bindparam("limit")))


_SESSION = Statement(select(*_ROW).where(_S.c.session_id == bindparam("session_id")))
_RESULTS = Statement(select(*_RESULT).where(R.c.session_id == bindparam("session_id")).order_by(R.c.id))
_RESULTS_OF = Statement(select(*_RESULT).where(R.c.session_id.in_(bindparam("ids", expanding=True))).order_by(R.c.id))
_SESSION_OF_RESULTS = Statement(
    select(R.c.session_id)
    .where(R.c.trace_id == bindparam("trace_id"), R.c.session_id.is_not(None))
    .order_by(R.c.id.desc())
    .limit(1)
)
_STORED_AT = Statement(select(traces.c.created_at).where(traces.c.trace_id == bindparam("trace_id")))
_TURNS_WITHIN = Statement(
    select(_S.c.session_id, _S.c.turns)
    .where(_S.c.completed_at >= bindparam("since"), _S.c.completed_at < bindparam("until"))
    .where(_S.c.turns.like(bindparam("pattern")))
    .order_by(_S.c.completed_at)
)


class SessionReads:
    """`sessions`, `session` and `session_of_trace` over `_run(read)` and `_columns_of(db)`."""

    _run: Callable[..., Any]
    _columns_of: Callable[[Any], Columns]

    def sessions(self, where: SessionFilter, limit: int, cursor: str | None = None) -> SessionsPage:
        after = decode_session_cursor(cursor) if cursor is not None else None
        limit = min(max(int(limit), 1), MAX_SESSIONS_PAGE)

        def read(db: Any) -> SessionsPage:
            if not self._columns_of(db).sessions:
                return SessionsPage(items=[])
            rows = execute(db, *sessions_query(where, after, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            briefs = _briefs(db, [row[0] for row in rows])
            items = [_session_item(row, briefs.get(row[0], [])) for row in rows]
            following = encode_session_cursor(items[-1].completed_at, items[-1].session_id) if more else None
            return SessionsPage(items=items, next_cursor=following)

        return self._run(read)

    def session(self, session_id: str) -> SessionDetail | None:
        def read(db: Any) -> SessionDetail | None:
            if not self._columns_of(db).sessions:
                return None
            row = execute(db, _SESSION, {"session_id": session_id}).fetchone()
            if row is None:
                return None
            found = execute(db, _RESULTS, {"session_id": session_id}).fetchall()
            verdicts = sorted((_verdict(r) for r in found), key=lambda v: _RANK[v.outcome])  # stable
            item = _session_item(row, [_brief(v) for v in verdicts])
            return SessionDetail(session=item, turns=_turns(row[12]), results=verdicts)

        return self._run(read)

    def session_of_trace(self, trace_id: str) -> str | None:
        def read(db: Any) -> str | None:
            if not self._columns_of(db).sessions:
                return None
            hit = execute(db, _SESSION_OF_RESULTS, {"trace_id": trace_id}).fetchone()
            if hit is not None:
                return str(hit[0])
            stored = execute(db, _STORED_AT, {"trace_id": trace_id}).fetchone()
            if stored is None:
                return None
            at = float(stored[0])
            pattern = f'%"{trace_id}"%'  # a trace id is hex: nothing to escape
            within = {"since": at - 60.0, "until": at + TURN_LOOKUP_WINDOW, "pattern": pattern}
            for session_id, turns in execute(db, _TURNS_WITHIN, within):
                if any(turn.trace_id == trace_id for turn in _turns(turns)):
                    return str(session_id)
            return None

        return self._run(read)


def _briefs(db: Any, ids: Sequence[str]) -> dict[str, list[SessionVerdictBrief]]:
    """The session-level results of the sessions `ids`, in brief, failing first."""
    if not ids:
        return {}
    found: dict[str, list[SessionVerdict]] = {}
    for row in execute(db, _RESULTS_OF, {"ids": list(ids)}):
        found.setdefault(row[0], []).append(_verdict(row))
    return {sid: [_brief(v) for v in sorted(vs, key=lambda v: _RANK[v.outcome])] for sid, vs in found.items()}


def _verdict(row: tuple) -> SessionVerdict:
    _, at, evaluator, passed, score, skip, explanation, details, trace_id = row
    outcome = _OUTCOMES.get(passed, "fail")
    turn, turn_trace_id = turn_of(details)
    return SessionVerdict(
        evaluator=evaluator,
        outcome=outcome,  # type: ignore[arg-type]  # one of Outcome
        evaluated_at=at,
        score=score,
        skip_reason=(skip or "no_verdict") if outcome == "skip" else None,
        explanation=explanation,
        details=details,
        trace_id=trace_id,
        turn=turn,
        turn_trace_id=turn_trace_id,
    )


def _brief(verdict: SessionVerdict) -> SessionVerdictBrief:
    return SessionVerdictBrief(
        evaluator=verdict.evaluator, outcome=verdict.outcome, score=verdict.score, turn=verdict.turn
    )


def _session_item(row: tuple, verdicts: list[SessionVerdictBrief]) -> SessionItem:
    sid, service, source, started, last, completed, ended, count, cut, tokens, cost, failed, turns = row
    return SessionItem(
        session_id=sid,
        service=service,
        source=source,
        started_at=started,
        last_turn_at=last,
        completed_at=completed,
        ended=ended,
        turn_count=count,
        turns_cut=cut,
        total_tokens=tokens or 0,
        cost_usd=cost,
        failed=failed,
        trace_ids=[turn.trace_id for turn in _turns(turns)],
        verdicts=verdicts,
    )


def _turns(text: str | None) -> list[SessionTurn]:
    """The stored turns (SESSION_TURN_FIELDS arrays), numbered from 1 in stored order; a malformed one is left out."""
    try:
        stored = json.loads(text) if text else []
    except ValueError:
        return []
    turns = []
    for index, values in enumerate(stored if isinstance(stored, list) else ()):
        if not isinstance(values, list) or len(values) < len(SESSION_TURN_FIELDS):
            continue
        fields = dict(zip(SESSION_TURN_FIELDS, values, strict=False))
        try:
            turns.append(_turn(index + 1, fields))
        except (TypeError, ValueError):
            continue
    return turns


def _turn(number: int, fields: dict[str, Any]) -> SessionTurn:
    errors = [StoredTurnError(kind=str(k), name=str(n), message=str(m)) for k, n, m in fields["errors"] or ()]
    return SessionTurn(
        turn=number,
        trace_id=str(fields["trace_id"]),
        started_at=int(fields["start_ns"]) / 1e9,
        ended_at=int(fields["end_ns"]) / 1e9,
        user_message=fields["user_message"],
        answer=fields["answer"],
        tool_calls=[str(name) for name in fields["tool_calls"] or ()],
        errors=errors,
        agents=[str(name) for name in fields["agents"] or ()],
        input_tokens=fields["input_tokens"],
        output_tokens=fields["output_tokens"],
        cost_usd=fields["cost_usd"],
    )
