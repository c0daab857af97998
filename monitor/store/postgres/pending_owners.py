"""The waiting judgements of replicas sharing one PostgreSQL store (`pending_judgements`, `pending_owners`): each
replica heartbeats its owner id (`beat`, by the database's clock); a replica adopts the rows of owners not seen for
the lease (`adopt`). Adoptions are serialised by a transaction-level advisory lock, and each one heartbeats its
adopter in the same transaction, so the next adopter (whose statements run after that commit) sees it alive: two
replicas never adopt the same row, and a live replica's rows are never taken. A replica stuck for longer than the
lease (its heartbeat stopped) may have its rows adopted while it still holds them: such a judgement may then be
made twice (the poll leases have the same bound, leases.py). A replica that stops gracefully `release`s its rows
(once its writes are flushed): the next start adopts them at once; after a SIGKILL they wait for the lease."""

from __future__ import annotations

from typing import Any

SHARED = True
ADOPT_LOCK = 0x61676D5F6A646770  # pg_advisory_xact_lock key: "agm_jdgp"
NOW = "EXTRACT(EPOCH FROM clock_timestamp())::float8"
_BEAT = (
    f"INSERT INTO pending_owners (owner, seen_at) VALUES (?, {NOW})"
    " ON CONFLICT (owner) DO UPDATE SET seen_at = EXCLUDED.seen_at"
)
_ADOPT = f"""UPDATE pending_judgements SET owner = ? WHERE owner <> ? AND owner NOT IN
(SELECT owner FROM pending_owners WHERE seen_at >= {NOW} - ?) RETURNING id, kind, created_at, payload"""
_FORGET_OWNERS = f"""DELETE FROM pending_owners o WHERE o.seen_at < {NOW} - ? AND o.owner <> ?
AND NOT EXISTS (SELECT 1 FROM pending_judgements p WHERE p.owner = o.owner)"""


def adopt(db: Any, owner: str, lease: float) -> list[tuple]:
    """The rows of owners not seen for `lease` seconds, made `owner`'s, in the caller's transaction (one adopter
    at a time); the owners gone with no row left are forgotten."""
    db.execute("SELECT pg_advisory_xact_lock(?)", (ADOPT_LOCK,))
    db.execute(_BEAT, (owner,))
    rows = db.execute(_ADOPT, (owner, owner, lease)).fetchall()
    db.execute(_FORGET_OWNERS, (lease, owner))
    return rows


def beat(db: Any, owner: str) -> None:
    """`owner` is alive (its `seen_at` now, by the database's clock)."""
    db.execute(_BEAT, (owner,))


def release(db: Any, owner: str) -> None:
    """`owner` stops (a graceful shutdown): its rows may be adopted at once, by the next start among others."""
    db.execute("DELETE FROM pending_owners WHERE owner = ?", (owner,))
