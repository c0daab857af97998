"""Legacy version 2: poll mode's checkpoints, the same tables on both databases.

`poll_checkpoints`: per polled source, its time mark and its own state (e.g. file offsets); `poll_seen`: the trace
ids a source evaluated near its mark (monitor/store/poll_checkpoints.py).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None
legacy_version = 2


def upgrade() -> None:
    real = sa.DOUBLE_PRECISION
    op.create_table(
        "poll_checkpoints",
        sa.Column("source", sa.Text, primary_key=True, nullable=True),
        sa.Column("mark", real),
        sa.Column("state", sa.Text),
        sa.Column("updated_at", real, nullable=False),
    )
    op.create_table(
        "poll_seen",
        sa.Column("source", sa.Text, primary_key=True, nullable=False),
        sa.Column("trace_id", sa.Text, primary_key=True, nullable=False),
        sa.Column("started_at", real, nullable=False),
    )
    op.create_index("poll_seen_time", "poll_seen", ["source", "started_at"])


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
