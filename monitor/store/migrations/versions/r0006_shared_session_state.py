"""Legacy version 6 (PostgreSQL only): what sharing open conversations needs besides.

When a session was completed (its row kept a while, so a late turn is counted late, not opened as a new
conversation), its turns kept and cut (`sessions.max_turns` across replicas), and the open ones indexed by their
last arrival (the idle claim's scan). A SQLite store belongs to one replica: nothing changes there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None
legacy_version = 6


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.add_column("open_sessions", sa.Column("completed_at", sa.DOUBLE_PRECISION))
    op.add_column("open_sessions", sa.Column("turns", sa.Integer, nullable=False, server_default=sa.text("0")))
    op.add_column("open_sessions", sa.Column("turns_cut", sa.Integer, nullable=False, server_default=sa.text("0")))
    op.create_index("open_sessions_waiting", "open_sessions", ["last_arrival"],
                    postgresql_where=sa.text("completed_at IS NULL"))  # fmt: skip
    op.create_index("open_sessions_completed", "open_sessions", ["completed_at"],
                    postgresql_where=sa.text("completed_at IS NOT NULL"))  # fmt: skip


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
