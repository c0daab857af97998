"""The statements that keep and forget waiting judgements (`pending_judgements`: migration 0009), the same on
SQLite and PostgreSQL (`?` placeholders): written with the rows of a write (packing.Packed `pending`, `resolved`),
the new rows first, so that a judgement kept and settled in one transaction is gone after it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.store.packing import Packed

KEEP = (
    "INSERT INTO pending_judgements (id, kind, created_at, owner, payload) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO NOTHING"
)
FORGET = "DELETE FROM pending_judgements WHERE id = ?"


def write_pending(db: Any, packed: Packed) -> None:
    """Keep `packed.pending` and forget `packed.resolved` on `db` (either store's connection, `?` placeholders),
    within the caller's transaction."""
    if packed.pending:
        db.executemany(KEEP, list(packed.pending))
    if packed.resolved:
        db.executemany(FORGET, [(key,) for key in packed.resolved])


# With SQLite one daemon owns the file (the one store's writer): every row another run left is this run's.
SHARED = False
_OTHERS = "SELECT id, kind, created_at, payload FROM pending_judgements WHERE owner <> ?"
_TAKE = "UPDATE pending_judgements SET owner = ? WHERE owner <> ?"


def adopt(db: Any, owner: str, lease: float) -> list[tuple]:
    """The rows other runs left, made `owner`'s (in the caller's transaction); `lease` is unused here."""
    rows = db.execute(_OTHERS, (owner,)).fetchall()
    if rows:
        db.execute(_TAKE, (owner, owner))
    return rows


def beat(db: Any, owner: str) -> None:
    """Nothing to tell: no other replica shares a SQLite file."""


def release(db: Any, owner: str) -> None:
    """Nothing to release: the next run adopts every row another run left."""
