"""Open conversations in the SQLite result store (`open_sessions`, `session_turns`: migration 0008), so that a
restart neither cuts nor splits them: the same interface and the same design as PostgreSQL's shared mode
(postgres/open_sessions.py, `OpenSessionTables`), for the one replica that owns a SQLite file.

The session tracker (monitor/sessions/shared.py) writes the turns it receives here (`arrive`, within milliseconds,
batched), and claims the sessions idle for `sessions.idle` (`claim`), evaluates them, writes their rows and marks
them completed (`complete`) in one transaction (`BEGIN IMMEDIATE`: the only writer while it runs). Idle time is
measured on this host's wall clock (`time.time()`: epoch seconds, kept in the file), so a session whose idle time
passed while the daemon was down is claimed at the first check after the start. A completed session's row is kept
for `REMEMBER_COMPLETED` seconds, so a turn arriving after completion is counted late, not opened anew. Turns are
masked before they are written (turn_json), as everything the store keeps.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from sqlalchemy import ColumnElement, bindparam, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert  # its ON CONFLICT compiles on SQLite too

from monitor.store.open_session_rows import REMEMBER_COMPLETED, Arrived, Claimed, ClaimedSession, turn_json
from monitor.store.statements import RowStatement, Statement, execute, execute_row, executemany_rows, scalar
from monitor.store.tables import open_sessions, session_turns

Clock = Callable[[], float]

_o, _t = open_sessions.c, session_turns.c
_WAITING = _o.completed_at.is_(None)


def _in_ids(column: ColumnElement[str]) -> ColumnElement[bool]:
    """`column` among the ids of `:ids`, a JSON array (one parameter however many ids)."""
    return column.in_(select(func.json_each(bindparam("ids")).table_valued("value").c.value))


_arrived = insert(open_sessions).values(
    {name: bindparam(name) for name in ("session_id", "service", "source", "first_arrival", "last_arrival")}
)
_ARRIVE = RowStatement(
    _arrived.on_conflict_do_update(
        index_elements=[_o.session_id], set_={"last_arrival": _arrived.excluded.last_arrival}, where=_WAITING
    ),
    ("session_id", "service", "source", "first_arrival", "last_arrival"),
)
_OPEN_TURNS = Statement(select(_o.session_id, _o.turns).where(_WAITING, _in_ids(_o.session_id)))
_TURN = ("session_id", "trace_id", "replica", "arrived_at", "turn")
_ADD_TURN = RowStatement(
    insert(session_turns).prefix_with("OR IGNORE", dialect="sqlite").values({name: bindparam(name) for name in _TURN}),
    _TURN,
)
_COUNT_TURNS = RowStatement(
    update(open_sessions)
    .values(turns=_o.turns + bindparam("added"), turns_cut=_o.turns_cut + bindparam("cut"))
    .where(_o.session_id == bindparam("sid")),
    ("added", "cut", "sid"),
)
_CLAIMED = select(_o.session_id, _o.source, _o.turns_cut).order_by(_o.last_arrival).limit(bindparam("limit"))
_CLAIM_IDLE = Statement(_CLAIMED.where(_WAITING, _o.last_arrival <= bindparam("idle_since")))
_CLAIM_OLDEST = Statement(_CLAIMED.where(_WAITING, ~_in_ids(_o.session_id)))
_OPEN = Statement(select(func.count()).select_from(open_sessions).where(_WAITING))
_TURNS_OF = Statement(select(_t.session_id, _t.turn).where(_in_ids(_t.session_id)))
_COMPLETE = Statement(update(open_sessions).values(completed_at=bindparam("now")).where(_in_ids(_o.session_id)))
_DROP_TURNS = Statement(delete(session_turns).where(_in_ids(_t.session_id)))
_FORGET = Statement(delete(open_sessions).where(_o.completed_at.is_not(None), _o.completed_at < bindparam("before")))


def arrive(
    db: sqlite3.Connection, wires: Sequence[tuple], replica: str, max_turns: int, clock: Clock = time.time
) -> Arrived:
    """Write `wires` (turns in the engine's turn_wire form) to their open sessions, opening those new to the file;
    in the caller's transaction. Turns of a completed session are late; a session keeps `max_turns` turns."""
    done = Arrived()
    by_session: dict[str, list[tuple]] = defaultdict(list)
    for wire in wires:
        by_session[wire[0]].append(wire)
    ids = sorted(by_session)
    now = clock()
    executemany_rows(db, _ARRIVE, [(s, by_session[s][0][13] or "", by_session[s][0][1], now, now) for s in ids])
    open_turns = dict(execute(db, _OPEN_TURNS, {"ids": json.dumps(ids)}).fetchall())
    counts: list[tuple[int, int, str]] = []
    for session_id in ids:
        batch = list({w[2]: w for w in by_session[session_id]}.values())  # one per trace
        done.duplicate += len(by_session[session_id]) - len(batch)
        if session_id not in open_turns:
            done.late += len(batch)
            continue
        room = max(max_turns - open_turns[session_id], 0)
        added = 0
        for w in batch[:room]:
            added += execute_row(db, _ADD_TURN, (session_id, w[2], replica, now, turn_json(w))).rowcount
        cut = max(len(batch) - room, 0)
        done.kept += added
        done.duplicate += min(len(batch), room) - added
        done.cut += cut
        if added or cut:
            counts.append((added, cut, session_id))
    if counts:
        executemany_rows(db, _COUNT_TURNS, counts)
    return done


def claim(db: sqlite3.Connection, idle: float, limit: int, max_open_sessions: int, clock: Clock = time.time) -> Claimed:
    """Up to `limit` sessions idle for `idle` seconds (longest idle first) and, when more than `max_open_sessions`
    are open, the longest-idle others (ended `cut`); each with all its turns. In the caller's transaction (which
    holds the file's write lock): `complete` them in it."""
    now = clock()
    rows = [(*row, "idle") for row in execute(db, _CLAIM_IDLE, {"idle_since": now - idle, "limit": limit})]
    over = open_count(db) - len(rows) - max_open_sessions
    if over > 0 and len(rows) < limit:
        taken = {"ids": json.dumps([row[0] for row in rows]), "limit": min(over, limit - len(rows))}
        rows += [(*row, "cut") for row in execute(db, _CLAIM_OLDEST, taken)]
    claimed = Claimed()
    if not rows:
        return claimed
    turns: dict[str, list[str]] = defaultdict(list)
    for session_id, turn in execute(db, _TURNS_OF, {"ids": json.dumps([row[0] for row in rows])}).fetchall():
        turns[session_id].append(turn)
    for session_id, source, turns_cut, ended in rows:
        loaded = [json.loads(text) for text in turns[session_id]]
        claimed.sessions.append(ClaimedSession(session_id, source, loaded, turns_cut, now, ended))
        claimed.cut_for_room += ended == "cut"
    return claimed


def complete(db: sqlite3.Connection, session_ids: Sequence[str], clock: Clock = time.time) -> None:
    """Mark the claimed sessions completed and drop their turns, in the claim's transaction."""
    ids = json.dumps(list(session_ids))
    execute(db, _COMPLETE, {"now": clock(), "ids": ids})
    execute(db, _DROP_TURNS, {"ids": ids})


def open_count(db: sqlite3.Connection) -> int:
    """Sessions open in the file."""
    return int(scalar(db, _OPEN))


def forget_completed(db: sqlite3.Connection, after: float = REMEMBER_COMPLETED, clock: Clock = time.time) -> int:
    """Forget the sessions completed more than `after` seconds ago; how many."""
    return int(execute(db, _FORGET, {"before": clock() - after}).rowcount)


def hold(db: sqlite3.Connection, seconds: float) -> None:
    """Nothing to do: a SQLite transaction has no statement timeout."""
