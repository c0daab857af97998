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

from sqlalchemy import bindparam, delete, exists, func, select, update
from sqlalchemy.dialects.postgresql import insert

from monitor.store.sql_functions import database_now
from monitor.store.statements import Statement, execute
from monitor.store.tables import pending_judgements, pending_owners

SHARED = True
ADOPT_LOCK = 0x61676D5F6A646770  # pg_advisory_xact_lock key: "agm_jdgp"
NOW = database_now()
_j, _w = pending_judgements.c, pending_owners.c
_LOCK = Statement(select(func.pg_advisory_xact_lock(bindparam("key"))))
_seen = insert(pending_owners).values(owner=bindparam("owner"), seen_at=NOW)
_BEAT = Statement(_seen.on_conflict_do_update(index_elements=[_w.owner], set_={"seen_at": _seen.excluded.seen_at}))
_ALIVE = select(_w.owner).where(_w.seen_at >= NOW - bindparam("lease"))
_ADOPT = Statement(
    update(pending_judgements)
    .values(owner=bindparam("adopter"))
    .where(_j.owner != bindparam("adopter"), _j.owner.not_in(_ALIVE))
    .returning(_j.id, _j.kind, _j.created_at, _j.payload)
)
_FORGET_OWNERS = Statement(
    delete(pending_owners).where(
        _w.seen_at < NOW - bindparam("lease"),
        _w.owner != bindparam("owner"),
        ~exists().where(_j.owner == _w.owner),
    )
)
_RELEASE = Statement(delete(pending_owners).where(_w.owner == bindparam("owner")))


def adopt(db: Any, owner: str, lease: float) -> list[tuple]:
    """The rows of owners not seen for `lease` seconds, made `owner`'s, in the caller's transaction (one adopter
    at a time); the owners gone with no row left are forgotten."""
    execute(db, _LOCK, {"key": ADOPT_LOCK})
    execute(db, _BEAT, {"owner": owner})
    rows = execute(db, _ADOPT, {"adopter": owner, "lease": lease}).fetchall()
    execute(db, _FORGET_OWNERS, {"lease": lease, "owner": owner})
    return list(rows)


def beat(db: Any, owner: str) -> None:
    """`owner` is alive (its `seen_at` now, by the database's clock)."""
    execute(db, _BEAT, {"owner": owner})


def release(db: Any, owner: str) -> None:
    """`owner` stops (a graceful shutdown): its rows may be adopted at once, by the next start among others."""
    execute(db, _RELEASE, {"owner": owner})
