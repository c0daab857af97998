"""The dimensions of each trace and its verdicts, for explanations (monitor/explain), on `trace_signals` (still
legacy version 9), the same on both databases.

`dimensions`: the codes of the trace's (dimension, value) pairs, 8 bytes each (monitor/store/dimension_codes.py);
`dimension_text`: the pairs as text, read only to name the codes an explanation reports; `failed_evaluators` /
`passed_evaluators`: the evaluators that failed / passed the trace, as `|name|name|` (a late judge's verdict is
appended to its trace's row). An explanation reads one time range of this table by `trace_signals_time`.

Only nullable columns are added: a release before this one still writes its rows (without them: its traces are
left out of explanations), so the legacy version stays 9.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None
legacy_version = 9


def upgrade() -> None:
    for column in (
        sa.Column("dimensions", sa.LargeBinary),
        sa.Column("dimension_text", sa.Text),
        sa.Column("failed_evaluators", sa.Text),
        sa.Column("passed_evaluators", sa.Text),
    ):
        op.add_column("trace_signals", column)  # SQLite's ALTER TABLE ADD COLUMN: no copy of the table


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
