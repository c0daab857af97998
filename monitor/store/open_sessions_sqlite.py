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

from monitor.store.open_session_rows import REMEMBER_COMPLETED, Arrived, Claimed, ClaimedSession, turn_json

Clock = Callable[[], float]

_IDS = "SELECT value FROM json_each(?)"
_ARRIVE = """INSERT INTO open_sessions (session_id, service, source, first_arrival, last_arrival) VALUES (?,?,?,?,?)
ON CONFLICT (session_id) DO UPDATE SET last_arrival = excluded.last_arrival WHERE completed_at IS NULL"""
_OPEN_TURNS = f"SELECT session_id, turns FROM open_sessions WHERE completed_at IS NULL AND session_id IN ({_IDS})"
_ADD_TURN = "INSERT OR IGNORE INTO session_turns (session_id, trace_id, replica, arrived_at, turn) VALUES (?,?,?,?,?)"
_COUNT_TURNS = "UPDATE open_sessions SET turns = turns + ?, turns_cut = turns_cut + ? WHERE session_id = ?"
_CLAIM_IDLE = """SELECT session_id, source, turns_cut FROM open_sessions
WHERE completed_at IS NULL AND last_arrival <= ? ORDER BY last_arrival LIMIT ?"""
_CLAIM_OLDEST = f"""SELECT session_id, source, turns_cut FROM open_sessions
WHERE completed_at IS NULL AND session_id NOT IN ({_IDS}) ORDER BY last_arrival LIMIT ?"""
_OPEN = "SELECT count(*) FROM open_sessions WHERE completed_at IS NULL"
_TURNS_OF = f"SELECT session_id, turn FROM session_turns WHERE session_id IN ({_IDS})"
_COMPLETE = f"UPDATE open_sessions SET completed_at = ? WHERE session_id IN ({_IDS})"
_DROP_TURNS = f"DELETE FROM session_turns WHERE session_id IN ({_IDS})"
_FORGET = "DELETE FROM open_sessions WHERE completed_at IS NOT NULL AND completed_at < ?"


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
    db.executemany(_ARRIVE, [(s, by_session[s][0][13] or "", by_session[s][0][1], now, now) for s in ids])
    open_turns = dict(db.execute(_OPEN_TURNS, (json.dumps(ids),)).fetchall())
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
            added += db.execute(_ADD_TURN, (session_id, w[2], replica, now, turn_json(w))).rowcount
        cut = max(len(batch) - room, 0)
        done.kept += added
        done.duplicate += min(len(batch), room) - added
        done.cut += cut
        if added or cut:
            counts.append((added, cut, session_id))
    if counts:
        db.executemany(_COUNT_TURNS, counts)
    return done


def claim(db: sqlite3.Connection, idle: float, limit: int, max_open_sessions: int, clock: Clock = time.time) -> Claimed:
    """Up to `limit` sessions idle for `idle` seconds (longest idle first) and, when more than `max_open_sessions`
    are open, the longest-idle others (ended `cut`); each with all its turns. In the caller's transaction (which
    holds the file's write lock): `complete` them in it."""
    now = clock()
    rows = [(*row, "idle") for row in db.execute(_CLAIM_IDLE, (now - idle, limit)).fetchall()]
    over = open_count(db) - len(rows) - max_open_sessions
    if over > 0 and len(rows) < limit:
        taken = json.dumps([row[0] for row in rows])
        rows += [(*row, "cut") for row in db.execute(_CLAIM_OLDEST, (taken, min(over, limit - len(rows))))]
    claimed = Claimed()
    if not rows:
        return claimed
    turns: dict[str, list[str]] = defaultdict(list)
    for session_id, turn in db.execute(_TURNS_OF, (json.dumps([row[0] for row in rows]),)).fetchall():
        turns[session_id].append(turn)
    for session_id, source, turns_cut, ended in rows:
        loaded = [json.loads(text) for text in turns[session_id]]
        claimed.sessions.append(ClaimedSession(session_id, source, loaded, turns_cut, now, ended))
        claimed.cut_for_room += ended == "cut"
    return claimed


def complete(db: sqlite3.Connection, session_ids: Sequence[str], clock: Clock = time.time) -> None:
    """Mark the claimed sessions completed and drop their turns, in the claim's transaction."""
    ids = json.dumps(list(session_ids))
    db.execute(_COMPLETE, (clock(), ids))
    db.execute(_DROP_TURNS, (ids,))


def open_count(db: sqlite3.Connection) -> int:
    """Sessions open in the file."""
    return int(db.execute(_OPEN).fetchone()[0])


def forget_completed(db: sqlite3.Connection, after: float = REMEMBER_COMPLETED, clock: Clock = time.time) -> int:
    """Forget the sessions completed more than `after` seconds ago; how many."""
    return db.execute(_FORGET, (clock() - after,)).rowcount


def hold(db: sqlite3.Connection, seconds: float) -> None:
    """Nothing to do: a SQLite transaction has no statement timeout."""
