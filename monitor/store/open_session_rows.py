"""Open conversations kept in the result store: what either database's tables give (`Arrived`, `Claimed`), the
stored form of a turn (`turn_json`), and the interface both implement (`OpenSessionTables`: postgres/open_sessions.py
for PostgreSQL, shared by the replicas; open_sessions_sqlite.py for SQLite, one replica's). The session tracker
that uses them is monitor/sessions/shared.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from evaluators.sessions import Ending
from monitor.outcomes import MAX_TEXT
from monitor.store.packing import mask

REMEMBER_COMPLETED = 86_400.0  # seconds a completed session's id is remembered (its late turns counted)


@dataclass(slots=True)
class Arrived:
    """What `arrive` did with a batch of turns."""

    kept: int = 0
    late: int = 0  # turns of sessions completed already
    cut: int = 0  # turns beyond `max_turns`
    duplicate: int = 0  # turns whose trace the session had


class ClaimedSession(NamedTuple):
    """A claimed session as stored: its turns in their wire form after the session id and source (turn_wire)."""

    session_id: str
    source: str
    turns: list[list[Any]]
    turns_cut: int
    completed_at: float  # the database's time of the claim
    ended: Ending


@dataclass(slots=True)
class Claimed:
    """Sessions held (in the caller's transaction) for evaluation, with all their turns."""

    sessions: list[ClaimedSession] = field(default_factory=list)
    cut_for_room: int = 0  # of them, completed early: more than `max_open_sessions` were open

    @property
    def ids(self) -> list[str]:
        return [s.session_id for s in self.sessions]


def turn_json(wire: tuple) -> str:
    """A turn's row: its wire form after the session id and source, as a JSON array, its texts (the user's
    message, the answer, the errors' names and messages) masked as the result store masks what it keeps."""
    fields = list(wire[2:])
    errors = fields[6]
    texts = [fields[3], fields[4], *(text for error in errors for text in error[1:])]
    masked = iter(mask(texts, [MAX_TEXT] * len(texts)))
    fields[3], fields[4] = next(masked), next(masked)
    fields[6] = [(error[0], next(masked) or "", next(masked) or "") for error in errors]
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


class OpenSessionTables(Protocol):
    """The open sessions' tables of one kind of database; every call runs in the caller's transaction (`db`: that
    store's connection, from its `transaction`)."""

    def arrive(self, db: Any, wires: Sequence[tuple], replica: str, max_turns: int) -> Arrived:
        """Write turns (turn_wire form) to their open sessions, opening the new ones; late and cut ones counted."""

    def claim(self, db: Any, idle: float, limit: int, max_open_sessions: int) -> Claimed:
        """Hold up to `limit` sessions idle for `idle` seconds (and the longest-idle beyond `max_open_sessions`,
        ended `cut`), each with all its turns."""

    def complete(self, db: Any, session_ids: Sequence[str]) -> None:
        """Mark claimed sessions completed (remembered a while) and drop their turns."""

    def open_count(self, db: Any) -> int:
        """Sessions open in the database."""

    def forget_completed(self, db: Any, after: float = REMEMBER_COMPLETED) -> int:
        """Forget the sessions completed more than `after` seconds ago; how many."""

    def hold(self, db: Any, seconds: float) -> None:
        """Let the transaction wait `seconds` between statements (the claimed sessions are evaluated in it)."""
