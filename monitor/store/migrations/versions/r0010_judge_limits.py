"""The judges' shared limits (PostgreSQL only; still legacy version 9): `judge_limits`, (scope, window start in
epoch seconds) → count, so that every replica's judge requests count against one `requests_per_minute` and its
tokens against one `daily_token_budget` (postgres/judge_limits.py).

Releases before the chain created this table on their first count (CREATE TABLE IF NOT EXISTS under the advisory
lock "agm_jlmt"), beside the versioned schema: a database may have it already, and an older replica still running
may be creating it now, so it is created the same way here. Nothing an older release reads or writes changes:
its legacy version stays 9, and a release before the chain still uses a database at this revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None
legacy_version = 9

CREATE_LOCK = 0x61676D5F6A6C6D74  # pg_advisory_xact_lock key: "agm_jlmt", the one the older releases took


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(sa.text("SELECT pg_advisory_xact_lock(:key)").bindparams(key=CREATE_LOCK))
    op.create_table(
        "judge_limits",
        sa.Column("scope", sa.Text, primary_key=True),
        sa.Column("window_start", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("count", sa.BigInteger, nullable=False),
        if_not_exists=True,
    )


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
