"""Baseline: the schema from before versioning (legacy version 0, SQLite only).

SQLite's first tables: `results` (a row per result, `id` the rowid), `traces` (a row per stored trace; `passed`,
the packed passing results, missing in the oldest databases) and their indexes. Every statement is idempotent: a
database from before versioning (user_version 0) runs it again, as the releases before the chain did, so that one
written by any of them ends the same (the index `results_eval_time` of the earliest is dropped). PostgreSQL's first
tables came with legacy version 1 (0001).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0000"
down_revision = None
branch_labels = None
depends_on = None
legacy_version = 0


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True, nullable=True),
        sa.Column("created_at", sa.REAL, nullable=False),
        sa.Column("trace_id", sa.Text, nullable=False),
        *(sa.Column(name, sa.Text) for name in ("span_id", "service", "agent", "model")),
        sa.Column("evaluator", sa.Text, nullable=False),
        sa.Column("level", sa.Text, nullable=False),
        sa.Column("score", sa.REAL),
        sa.Column("passed", sa.Integer),
        *(sa.Column(name, sa.Text) for name in ("skip_reason", "explanation", "details")),
        if_not_exists=True,
    )
    op.create_index("results_trace", "results", ["trace_id"], if_not_exists=True)
    op.drop_index("results_eval_time", "results", if_exists=True)
    op.create_index("results_failing", "results", ["evaluator", "created_at"], sqlite_where=sa.text("passed = 0"),
                    if_not_exists=True)  # fmt: skip
    op.create_index("results_failing_time", "results", ["created_at"], sqlite_where=sa.text("passed = 0"),
                    if_not_exists=True)  # fmt: skip
    op.create_table(
        "traces",
        sa.Column("trace_id", sa.Text, primary_key=True, nullable=True),
        sa.Column("created_at", sa.REAL, nullable=False),
        *(sa.Column(name, sa.Text) for name in ("service", "input", "output")),
        sa.Column("span_count", sa.Integer),
        sa.Column("duration_ms", sa.REAL),
        sa.Column("has_errors", sa.Integer),
        sa.Column("passed", sa.Text),
        if_not_exists=True,
    )
    op.create_index("traces_time", "traces", ["created_at"], if_not_exists=True)


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
