"""Legacy version 7: reviewers' verdicts on results (`reviews`: monitor/store/reviews.py), the same on both.

A result is named by (trace_id, evaluator, level, span_id: '' when it names no span), so a passing result kept in
`traces.passed` can be reviewed like a stored row. Every change of a review is a new row: the one in force has
`superseded_at` NULL (one per result: the unique index), the earlier ones the time they were replaced (the audit
trail). `verdict_*`: the evaluator's verdict as the reviewer saw it; `task`: a JSON snapshot of the trace (input,
output, tools in order, duration, cost, models) taken at review time, so a review outlives the trace's retention
and becomes a dataset task. Reviews are not pruned with the results.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None
legacy_version = 7


def upgrade() -> None:
    real = sa.DOUBLE_PRECISION
    op.create_table(
        "reviews",
        sa.Column("review_id", sa.Text, primary_key=True, nullable=True),
        *(sa.Column(name, sa.Text, nullable=False) for name in ("trace_id", "evaluator", "level", "span_id")),
        sa.Column("session_id", sa.Text),
        sa.Column("service", sa.Text),
        sa.Column("verdict_passed", sa.Integer),
        sa.Column("verdict_score", real),
        sa.Column("verdict_signature", sa.Text),
        sa.Column("agreement", sa.Text, nullable=False),
        sa.Column("corrected_score", real),
        sa.Column("corrected_label", sa.Text),
        sa.Column("note", sa.Text),
        sa.Column("reviewer", sa.Text, nullable=False),
        sa.Column("created_at", real, nullable=False),
        sa.Column("superseded_at", real),
        sa.Column("task", sa.Text),
    )
    in_force = sa.text("superseded_at IS NULL")
    op.create_index("reviews_in_force", "reviews", ["trace_id", "evaluator", "level", "span_id"], unique=True,
                    sqlite_where=in_force, postgresql_where=in_force)  # fmt: skip
    op.create_index("reviews_evaluator", "reviews", ["evaluator", "created_at"], sqlite_where=in_force,
                    postgresql_where=in_force)  # fmt: skip
    op.create_index("reviews_time", "reviews", ["created_at"])


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
