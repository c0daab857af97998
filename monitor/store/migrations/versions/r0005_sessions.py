"""Legacy version 5: conversations; on PostgreSQL, the tables that share the open ones between replicas.

`sessions`: one row per evaluated session. `turns`: a JSON array of turn summaries in start order
(schema.SESSION_TURN_FIELDS), their texts masked and bounded like the traces'; `started_at`: the first turn's
start, `last_turn_at`: the last turn's end (epoch seconds, the spans' clocks); `completed_at`: when the daemon
completed it (`ended`: idle, explicit_end or cut); `failed`: its failing session-level results. A session evaluated
again (its id forgotten, `sessions.max_open_sessions`, or claimed again) replaces its row and its session-level
results. `results.session_id`: the session a session-level result is about (NULL for the others), indexed.

PostgreSQL only: conversations split between replicas (the Collector routes by trace id). Every replica writes
the turns it evaluates to `session_turns` and keeps `open_sessions.last_arrival` (when a turn last arrived, by any
replica); a session idle for `sessions.idle` is claimed by exactly one replica (`SELECT ... FOR UPDATE SKIP
LOCKED`), which evaluates it from all its turns, writes `sessions` and marks it completed in one transaction
(postgres/open_sessions.py). SQLite has its own since legacy version 8 (0008).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None
legacy_version = 5


def upgrade() -> None:
    real = sa.DOUBLE_PRECISION
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.Text, primary_key=True, nullable=True),
        sa.Column("service", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        *(sa.Column(name, real, nullable=False) for name in ("started_at", "last_turn_at", "completed_at")),
        sa.Column("ended", sa.Text, nullable=False),
        sa.Column("turn_count", sa.Integer, nullable=False),
        sa.Column("turns_cut", sa.Integer, nullable=False),
        sa.Column("total_tokens", sa.BigInteger, nullable=False),
        sa.Column("cost_usd", real),
        sa.Column("failed", sa.Integer, nullable=False),
        sa.Column("turns", sa.Text, nullable=False),
    )
    op.create_index("sessions_completed", "sessions", ["completed_at"])
    op.create_index("sessions_service", "sessions", ["service", "completed_at"])
    if op.get_bind().dialect.name == "postgresql":
        _shared_sessions()
    op.add_column("results", sa.Column("session_id", sa.Text))
    where = sa.text("session_id IS NOT NULL")
    op.create_index("results_session", "results", ["session_id"], sqlite_where=where, postgresql_where=where)


def _shared_sessions() -> None:
    real = sa.DOUBLE_PRECISION
    op.create_table(
        "open_sessions",
        sa.Column("session_id", sa.Text, primary_key=True),
        sa.Column("service", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("first_arrival", real, nullable=False),
        sa.Column("last_arrival", real, nullable=False),
    )
    op.create_index("open_sessions_idle", "open_sessions", ["last_arrival"])
    op.create_table(
        "session_turns",
        sa.Column("session_id", sa.Text, primary_key=True),
        sa.Column("trace_id", sa.Text, primary_key=True),
        sa.Column("replica", sa.Text, nullable=False),
        sa.Column("arrived_at", real, nullable=False),
        sa.Column("turn", JSONB, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
