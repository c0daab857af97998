"""The statements that keep and forget waiting judgements (`pending_judgements`: migration 0009), the same on
SQLite and PostgreSQL (statements.py): written with the rows of a write (packing.Packed `pending`, `resolved`),
the new rows first, so that a judgement kept and settled in one transaction is gone after it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects.postgresql import insert  # its ON CONFLICT compiles on SQLite too

from monitor.store.statements import RowStatement, Statement, execute, executemany_rows
from monitor.store.tables import pending_judgements

if TYPE_CHECKING:
    from monitor.store.packing import Packed

_ROW = ("id", "kind", "created_at", "owner", "payload")
KEEP = RowStatement(
    insert(pending_judgements)
    .values({name: bindparam(name) for name in _ROW})
    .on_conflict_do_nothing(index_elements=[pending_judgements.c.id]),
    _ROW,
)
FORGET = RowStatement(pending_judgements.delete().where(pending_judgements.c.id == bindparam("id")), ("id",))


def write_pending(db: Any, packed: Packed) -> None:
    """Keep `packed.pending` and forget `packed.resolved` on `db` (either store's connection), within the caller's
    transaction."""
    if packed.pending:
        executemany_rows(db, KEEP, packed.pending)
    if packed.resolved:
        executemany_rows(db, FORGET, [(key,) for key in packed.resolved])


# With SQLite one daemon owns the file (the one store's writer): every row another run left is this run's.
SHARED = False
_p = pending_judgements.c
_OTHERS = Statement(select(_p.id, _p.kind, _p.created_at, _p.payload).where(_p.owner != bindparam("owner")))
_TAKE = Statement(update(pending_judgements).values(owner=bindparam("adopter")).where(_p.owner != bindparam("adopter")))


def adopt(db: Any, owner: str, lease: float) -> list[tuple]:
    """The rows other runs left, made `owner`'s (in the caller's transaction); `lease` is unused here."""
    rows = execute(db, _OTHERS, {"owner": owner}).fetchall()
    if rows:
        execute(db, _TAKE, {"adopter": owner})
    return list(rows)


def beat(db: Any, owner: str) -> None:
    """Nothing to tell: no other replica shares a SQLite file."""


def release(db: Any, owner: str) -> None:
    """Nothing to release: the next run adopts every row another run left."""
