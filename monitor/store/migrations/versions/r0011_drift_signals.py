"""Drift detection's rows (still legacy version 9), the same on both databases.

`trace_signals`: one compact row per stored trace, written in the transaction of its trace row and with its
`created_at`: its service, agent and variant, whether it failed, its LLM calls, tool calls and failed tool calls,
its answer's length, tokens, cost and duration (NULL where it has none); `trace_tools`: one row per distinct tool
a trace called. Both are what a drift report aggregates per window (GROUP BY over their time index), and retention
deletes them with their traces. `drift_episodes`: the changes found significant and still active, (service, agent,
signal, subject) → direction and since, so that an episode's start survives a restart and every replica agrees on
it. `drift_buckets`: a bucket's aggregates (JSON) once read, so that the same-hours baselines of the following
days read one row instead of the bucket's traces. The window reads of verdicts use `results_time` (0001).

Only tables are added: nothing an older release reads or writes changes, so the legacy version stays 9 and a
release before the chain still uses a database at this revision (it writes no signal rows: its traces are missing
from the drift windows, and its retention leaves the new tables to this release's).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None
legacy_version = 9


def upgrade() -> None:
    real = sa.DOUBLE_PRECISION
    flag = sa.SmallInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "trace_signals",
        sa.Column("trace_id", sa.Text, primary_key=True),
        sa.Column("created_at", real, nullable=False),
        sa.Column("service", sa.Text, nullable=False),
        sa.Column("agent", sa.Text, nullable=False, server_default=""),
        sa.Column("variant", sa.Text, nullable=False, server_default=""),
        sa.Column("has_error", flag, nullable=False),
        sa.Column("llm_calls", sa.Integer, nullable=False),
        sa.Column("tool_calls", sa.Integer, nullable=False),
        sa.Column("tool_failures", sa.Integer, nullable=False),
        sa.Column("response_chars", sa.Integer),
        sa.Column("tokens", sa.BigInteger),
        sa.Column("cost_usd", real),
        sa.Column("duration_ms", real),
    )
    op.create_index("trace_signals_time", "trace_signals", ["created_at"])
    op.create_table(
        "trace_tools",
        sa.Column("trace_id", sa.Text, primary_key=True),
        sa.Column("tool", sa.Text, primary_key=True),
        sa.Column("created_at", real, nullable=False),
        sa.Column("service", sa.Text, nullable=False),
        sa.Column("agent", sa.Text, nullable=False, server_default=""),
    )
    op.create_index("trace_tools_time", "trace_tools", ["created_at"])
    op.create_table(
        "drift_episodes",
        sa.Column("service", sa.Text, primary_key=True),
        sa.Column("agent", sa.Text, primary_key=True),
        sa.Column("signal", sa.Text, primary_key=True),
        sa.Column("subject", sa.Text, primary_key=True),
        sa.Column("direction", sa.Text, nullable=False),
        sa.Column("since", real, nullable=False),
    )
    op.create_table(
        "drift_buckets",
        sa.Column("start", real, primary_key=True),
        sa.Column("size", real, primary_key=True),
        sa.Column("aggregates", sa.Text, nullable=False),
        sa.Column("stored_at", real, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
