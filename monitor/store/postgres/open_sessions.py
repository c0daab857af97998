"""Open conversations shared by every replica of one PostgreSQL store (schema.py: `open_sessions`, `session_turns`).

The Collector routes spans by trace id, so the turns of one conversation reach different replicas. Each replica
writes the turns it evaluated here (`arrive`); a session with no new turn for `sessions.idle`, by the database's
clock, is claimed by exactly one replica (`claim`: `SELECT ... FOR UPDATE SKIP LOCKED`), which loads all its
turns, evaluates it, writes its rows and marks it completed (`complete`) in that one transaction. A replica that
dies mid-claim rolls back: the session stays open and another replica claims it.

Rows are locked in one order (open_sessions, then session_turns; session ids sorted within a statement), so two
replicas' writes never deadlock; a claim skips the rows another transaction holds. A completed session's row is
kept for `REMEMBER_COMPLETED` seconds, so a turn arriving after completion is counted late, not opened anew.
Idle time is measured on the database's clock: replicas' clocks may differ, the server's is one. Turns are
masked before they are written (turn_json), as everything the store keeps: the evaluators read them masked.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, Text, any_, bindparam, cast, delete, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, insert

from monitor.store.open_session_rows import REMEMBER_COMPLETED, Arrived, Claimed, ClaimedSession, turn_json
from monitor.store.postgres.connection import Connection
from monitor.store.sql_functions import database_now
from monitor.store.statements import Statement, execute, scalar
from monitor.store.tables import open_sessions, session_turns

__all__ = ["Arrived", "Claimed", "ClaimedSession", "arrive", "claim", "complete", "forget_completed", "hold",
           "open_count", "turn_json"]  # fmt: skip

NOW = database_now()
_o, _t = open_sessions.c, session_turns.c
_WAITING = _o.completed_at.is_(None)


def _unnest(name: str, *columns: tuple[str, Any]) -> Any:
    """The rows of parallel array parameters (`columns`: each column's name and element type), sorted by the
    caller (rows are locked in one order)."""
    arrays = [cast(bindparam(column), ARRAY(kind)) for column, kind in columns]
    return func.unnest(*arrays).table_valued(*(column for column, _ in columns)).render_derived(name=name)


# Each statement takes the session ids sorted (one lock order for every replica).
_new = _unnest("t", ("s", Text), ("v", Text), ("src", Text))
_arrived = insert(open_sessions).from_select(
    ["session_id", "service", "source", "first_arrival", "last_arrival"],
    select(_new.c.s, _new.c.v, _new.c.src, NOW, NOW).order_by(_new.c.s),
)
_ARRIVE = Statement(
    _arrived.on_conflict_do_update(
        index_elements=[_o.session_id], set_={"last_arrival": _arrived.excluded.last_arrival}, where=_WAITING
    ).returning(_o.session_id, _o.turns)
)
_turns = _unnest("x", ("s", Text), ("t", Text), ("j", Text))
_ADD_TURNS = Statement(
    insert(session_turns)
    .from_select(
        ["session_id", "trace_id", "replica", "arrived_at", "turn"],
        select(_turns.c.s, _turns.c.t, bindparam("replica"), NOW, cast(_turns.c.j, JSONB)).order_by(
            _turns.c.s, _turns.c.t
        ),
    )
    .on_conflict_do_nothing()
    .returning(_t.session_id)
)
_counts = _unnest("x", ("s", Text), ("n", Integer), ("c", Integer))
_COUNT_TURNS = Statement(
    update(open_sessions)
    .values(turns=_o.turns + _counts.c.n, turns_cut=_o.turns_cut + _counts.c.c)
    .where(_o.session_id == _counts.c.s)
)
_claimed = select(_o.session_id, _o.source, _o.turns_cut, NOW).where(_WAITING).order_by(_o.last_arrival)
_claimed = _claimed.limit(bindparam("limit")).with_for_update(skip_locked=True)
_CLAIM_IDLE = Statement(_claimed.where(_o.last_arrival <= NOW - bindparam("idle")))
_CLAIM_OLDEST = Statement(_claimed.where(~(_o.session_id == any_(bindparam("taken")))))
_OPEN = Statement(select(func.count()).select_from(open_sessions).where(_WAITING))
_TURNS_OF = Statement(select(_t.session_id, cast(_t.turn, Text)).where(_t.session_id == any_(bindparam("ids"))))
_COMPLETE = Statement(update(open_sessions).values(completed_at=NOW).where(_o.session_id == any_(bindparam("ids"))))
_DROP_TURNS = Statement(delete(session_turns).where(_t.session_id == any_(bindparam("ids"))))
_FORGET = Statement(
    delete(open_sessions).where(_o.completed_at.is_not(None), _o.completed_at < NOW - bindparam("after"))
)


def arrive(db: Connection, wires: Sequence[tuple], replica: str, max_turns: int) -> Arrived:
    """Write `wires` (turns this replica evaluated, in the engine's turn_wire form) to their open sessions,
    opening those new to the database; in the caller's transaction. Turns of a completed session are late; a
    session keeps `max_turns` turns in all."""
    done = Arrived()
    by_session: dict[str, list[tuple]] = defaultdict(list)
    for wire in wires:
        by_session[wire[0]].append(wire)
    ids = sorted(by_session)
    first = [by_session[s][0] for s in ids]
    arrays = {"s": ids, "v": [w[13] or "" for w in first], "src": [w[1] for w in first]}
    open_turns = dict(execute(db, _ARRIVE, arrays).fetchall())
    rows: list[tuple[str, str, str]] = []
    cut: dict[str, int] = {}
    for session_id in ids:
        batch = list({w[2]: w for w in by_session[session_id]}.values())  # one per trace
        done.duplicate += len(by_session[session_id]) - len(batch)
        if session_id not in open_turns:
            done.late += len(batch)
            continue
        room = max(max_turns - open_turns[session_id], 0)
        rows += ((session_id, w[2], turn_json(w)) for w in batch[:room])
        if len(batch) > room:
            cut[session_id] = len(batch) - room
    added: dict[str, int] = defaultdict(int)
    if rows:
        sessions, traces, turns = map(list, zip(*rows, strict=True))
        for (session_id,) in execute(db, _ADD_TURNS, {"replica": replica, "s": sessions, "t": traces, "j": turns}):
            added[session_id] += 1
    done.kept = sum(added.values())
    done.duplicate += len(rows) - done.kept
    done.cut = sum(cut.values())
    counted = sorted(set(added) | set(cut))
    if counted:
        execute(
            db, _COUNT_TURNS, {"s": counted, "n": [added[s] for s in counted], "c": [cut.get(s, 0) for s in counted]}
        )
    return done


def claim(db: Connection, idle: float, limit: int, max_open_sessions: int) -> Claimed:
    """Lock up to `limit` sessions idle for `idle` seconds (longest idle first) and, when more than
    `max_open_sessions` are open, the longest-idle others (ended `cut`); each with all its turns. In the caller's
    transaction: nobody else claims them until it ends; `complete` them in it."""
    rows = [(*row, "idle") for row in execute(db, _CLAIM_IDLE, {"idle": idle, "limit": limit}).fetchall()]
    over = open_count(db) - len(rows) - max_open_sessions
    if over > 0 and len(rows) < limit:
        taken = {"taken": [row[0] for row in rows], "limit": min(over, limit - len(rows))}
        rows += [(*row, "cut") for row in execute(db, _CLAIM_OLDEST, taken).fetchall()]
    claimed = Claimed()
    if not rows:
        return claimed
    turns: dict[str, list[str]] = defaultdict(list)
    for session_id, turn in execute(db, _TURNS_OF, {"ids": [row[0] for row in rows]}).fetchall():
        turns[session_id].append(turn)
    for session_id, source, turns_cut, now, ended in rows:
        loaded = [json.loads(text) for text in turns[session_id]]
        claimed.sessions.append(ClaimedSession(session_id, source, loaded, turns_cut, now, ended))
        claimed.cut_for_room += ended == "cut"
    return claimed


def complete(db: Connection, session_ids: Sequence[str]) -> None:
    """Mark the claimed sessions completed and drop their turns, in the claim's transaction."""
    ids = {"ids": list(session_ids)}
    execute(db, _COMPLETE, ids)
    execute(db, _DROP_TURNS, ids)


def open_count(db: Connection) -> int:
    """Sessions open in the database (every replica's)."""
    return int(scalar(db, _OPEN))


def hold(db: Connection, seconds: float) -> None:
    """Let the transaction wait `seconds` between statements (its claimed sessions are evaluated meanwhile)."""
    db.renew(seconds)


def forget_completed(db: Connection, after: float = REMEMBER_COMPLETED) -> int:
    """Forget the sessions completed more than `after` seconds ago; how many."""
    return int(execute(db, _FORGET, {"after": after}).rowcount)
