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

from monitor.store.open_session_rows import REMEMBER_COMPLETED, Arrived, Claimed, ClaimedSession, turn_json
from monitor.store.postgres.connection import Connection

__all__ = ["Arrived", "Claimed", "ClaimedSession", "arrive", "claim", "complete", "forget_completed", "hold",
           "open_count", "turn_json"]  # fmt: skip

NOW = "EXTRACT(EPOCH FROM clock_timestamp())::float8"
_ARRIVE = f"""INSERT INTO open_sessions AS o (session_id, service, source, first_arrival, last_arrival)
SELECT s, v, src, {NOW}, {NOW} FROM unnest(%s::text[], %s::text[], %s::text[]) AS t(s, v, src) ORDER BY s
ON CONFLICT (session_id) DO UPDATE SET last_arrival = EXCLUDED.last_arrival WHERE o.completed_at IS NULL
RETURNING session_id, turns"""
_ADD_TURNS = f"""INSERT INTO session_turns (session_id, trace_id, replica, arrived_at, turn)
SELECT s, t, %s, {NOW}, j::jsonb FROM unnest(%s::text[], %s::text[], %s::text[]) AS x(s, t, j) ORDER BY s, t
ON CONFLICT DO NOTHING RETURNING session_id"""
_COUNT_TURNS = """UPDATE open_sessions AS o SET turns = o.turns + x.n, turns_cut = o.turns_cut + x.c
FROM unnest(%s::text[], %s::int[], %s::int[]) AS x(s, n, c) WHERE o.session_id = x.s"""
_CLAIM_IDLE = f"""SELECT session_id, source, turns_cut, {NOW} FROM open_sessions
WHERE completed_at IS NULL AND last_arrival <= {NOW} - %s ORDER BY last_arrival LIMIT %s FOR UPDATE SKIP LOCKED"""
_CLAIM_OLDEST = f"""SELECT session_id, source, turns_cut, {NOW} FROM open_sessions
WHERE completed_at IS NULL AND NOT (session_id = ANY(%s)) ORDER BY last_arrival LIMIT %s FOR UPDATE SKIP LOCKED"""
_OPEN = "SELECT count(*) FROM open_sessions WHERE completed_at IS NULL"
_TURNS_OF = "SELECT session_id, turn::text FROM session_turns WHERE session_id = ANY(%s)"
_COMPLETE = f"UPDATE open_sessions SET completed_at = {NOW} WHERE session_id = ANY(%s)"
_DROP_TURNS = "DELETE FROM session_turns WHERE session_id = ANY(%s)"
_FORGET = f"DELETE FROM open_sessions WHERE completed_at IS NOT NULL AND completed_at < {NOW} - %s"


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
    db.renew()
    open_turns = dict(db.conn.execute(_ARRIVE, (ids, [w[13] or "" for w in first], [w[1] for w in first])).fetchall())
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
        db.renew()
        for (session_id,) in db.conn.execute(_ADD_TURNS, (replica, *map(list, zip(*rows, strict=True)))).fetchall():
            added[session_id] += 1
    done.kept = sum(added.values())
    done.duplicate += len(rows) - done.kept
    done.cut = sum(cut.values())
    counted = sorted(set(added) | set(cut))
    if counted:
        db.renew()
        db.conn.execute(_COUNT_TURNS, (counted, [added[s] for s in counted], [cut.get(s, 0) for s in counted]))
    return done


def claim(db: Connection, idle: float, limit: int, max_open_sessions: int) -> Claimed:
    """Lock up to `limit` sessions idle for `idle` seconds (longest idle first) and, when more than
    `max_open_sessions` are open, the longest-idle others (ended `cut`); each with all its turns. In the caller's
    transaction: nobody else claims them until it ends; `complete` them in it."""
    db.renew()
    rows = [(*row, "idle") for row in db.conn.execute(_CLAIM_IDLE, (idle, limit)).fetchall()]
    over = int(db.scalar(_OPEN)) - len(rows) - max_open_sessions
    if over > 0 and len(rows) < limit:
        db.renew()
        taken = [row[0] for row in rows]
        rows += [(*row, "cut") for row in db.conn.execute(_CLAIM_OLDEST, (taken, min(over, limit - len(rows))))]
    claimed = Claimed()
    if not rows:
        return claimed
    turns: dict[str, list[str]] = defaultdict(list)
    db.renew()
    for session_id, turn in db.conn.execute(_TURNS_OF, ([row[0] for row in rows],)).fetchall():
        turns[session_id].append(turn)
    for session_id, source, turns_cut, now, ended in rows:
        loaded = [json.loads(text) for text in turns[session_id]]
        claimed.sessions.append(ClaimedSession(session_id, source, loaded, turns_cut, now, ended))
        claimed.cut_for_room += ended == "cut"
    return claimed


def complete(db: Connection, session_ids: Sequence[str]) -> None:
    """Mark the claimed sessions completed and drop their turns, in the claim's transaction."""
    ids = list(session_ids)
    db.renew()
    db.conn.execute(_COMPLETE, (ids,))
    db.renew()
    db.conn.execute(_DROP_TURNS, (ids,))


def open_count(db: Connection) -> int:
    """Sessions open in the database (every replica's)."""
    return int(db.scalar(_OPEN))


def hold(db: Connection, seconds: float) -> None:
    """Let the transaction wait `seconds` between statements (its claimed sessions are evaluated meanwhile)."""
    db.renew(seconds)


def forget_completed(db: Connection, after: float = REMEMBER_COMPLETED) -> int:
    """Forget the sessions completed more than `after` seconds ago; how many."""
    db.renew()
    return db.conn.execute(_FORGET, (after,)).rowcount
