"""Legacy version 1: what the review filters and groups on; PostgreSQL's first tables.

SQLite: `traces` gains `agents`, `models`, `tools` (JSON arrays of names: what the review filters and groups on,
with json_each) and `detail` (JSON: steps, model usage, error spans), and `passed` where the oldest databases lack
it; `results` gets an index on time for every row (the review lists skips too), replacing the failing-only one,
and one for the passing rows of the oldest databases (which had a row per passing result before they were packed
per trace; empty, so free, in every database written since).

PostgreSQL: the same two tables at this version, in PostgreSQL's types: jsonb for the packed JSON, SMALLINT flags,
and an identity column `id` on both for the insertion order SQLite's rowid gives (ending the time indexes, so that
rows of one time keep their order).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = "0000"
branch_labels = None
depends_on = None
legacy_version = 1

JSON_COLUMNS = ("passed", "agents", "models", "tools", "detail")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite()
    else:
        _postgresql()


def _sqlite() -> None:
    present = {column["name"] for column in sa.inspect(op.get_bind()).get_columns("traces")}
    for name in JSON_COLUMNS:
        if name not in present:
            op.add_column("traces", sa.Column(name, sa.Text))
    op.drop_index("results_failing_time", "results", if_exists=True)
    op.create_index("results_time", "results", ["created_at"], if_not_exists=True)
    op.create_index("results_passing", "results", ["created_at"], sqlite_where=sa.text("passed = 1"),
                    if_not_exists=True)  # fmt: skip


def _postgresql() -> None:
    real = sa.DOUBLE_PRECISION
    op.create_table(
        "results",
        sa.Column("id", sa.BigInteger, sa.Identity(always=True), primary_key=True),
        sa.Column("created_at", real, nullable=False),
        sa.Column("trace_id", sa.Text, nullable=False),
        *(sa.Column(name, sa.Text) for name in ("span_id", "service", "agent", "model")),
        sa.Column("evaluator", sa.Text, nullable=False),
        sa.Column("level", sa.Text, nullable=False),
        sa.Column("score", real),
        sa.Column("passed", sa.SmallInteger),
        *(sa.Column(name, sa.Text) for name in ("skip_reason", "explanation", "details")),
    )
    op.create_index("results_trace", "results", ["trace_id"])
    op.create_index("results_failing", "results", ["evaluator", "created_at"], postgresql_where=sa.text("passed = 0"))
    op.create_index("results_time", "results", ["created_at", "id"])
    op.create_table(
        "traces",
        sa.Column("id", sa.BigInteger, sa.Identity(always=True), nullable=False),
        sa.Column("trace_id", sa.Text, primary_key=True),
        sa.Column("created_at", real, nullable=False),
        *(sa.Column(name, sa.Text) for name in ("service", "input", "output")),
        sa.Column("span_count", sa.Integer),
        sa.Column("duration_ms", real),
        sa.Column("has_errors", sa.SmallInteger),
        *(sa.Column(name, JSONB) for name in JSON_COLUMNS),
    )
    op.create_index("traces_time", "traces", ["created_at", "id"])


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
