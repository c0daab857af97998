"""Legacy version 8 (SQLite only): open conversations kept in the file, so that a restart neither cuts nor splits
them (open_sessions_sqlite.py): the same tables as PostgreSQL's shared ones (0005, 0006), for the one replica that
owns the file. PostgreSQL has had them since legacy versions 5 and 6: nothing changes there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None
legacy_version = 8


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.create_table(
        "open_sessions",
        sa.Column("session_id", sa.Text, primary_key=True, nullable=True),
        sa.Column("service", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("first_arrival", sa.REAL, nullable=False),
        sa.Column("last_arrival", sa.REAL, nullable=False),
        sa.Column("completed_at", sa.REAL),
        sa.Column("turns", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("turns_cut", sa.Integer, nullable=False, server_default=sa.text("0")),
    )
    op.create_index("open_sessions_waiting", "open_sessions", ["last_arrival"],
                    sqlite_where=sa.text("completed_at IS NULL"))  # fmt: skip
    op.create_index("open_sessions_completed", "open_sessions", ["completed_at"],
                    sqlite_where=sa.text("completed_at IS NOT NULL"))  # fmt: skip
    op.create_table(
        "session_turns",
        sa.Column("session_id", sa.Text, primary_key=True, nullable=False),
        sa.Column("trace_id", sa.Text, primary_key=True, nullable=False),
        sa.Column("replica", sa.Text, nullable=False),
        sa.Column("arrived_at", sa.REAL, nullable=False),
        sa.Column("turn", sa.Text, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
