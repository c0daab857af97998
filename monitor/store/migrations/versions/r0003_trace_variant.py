"""Legacy version 3: the trace's variant.

`traces.variant`: the agent version that produced the trace (`variants.attribute`; '' when variants are off, for
the traces lacking the attribute and for every row written before: a constant default, so neither database
rewrites a row), indexed for the review's variant filter like `traces_time` within each variant (PostgreSQL's
index ends with the identity column, as its `traces_time` does).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None
legacy_version = 3


def upgrade() -> None:
    op.add_column("traces", sa.Column("variant", sa.Text, nullable=False, server_default=""))
    columns = ["variant", "created_at"] if op.get_bind().dialect.name == "sqlite" else ["variant", "created_at", "id"]
    op.create_index("traces_variant", "traces", columns)


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
