"""Legacy version 4: failure signatures, the same on both databases.

`signatures`: one row per failure mode (evaluators.signatures). Its JSON columns hold bounded arrays
(store/signatures.py keeps the bounds): the services, agents, models, variants and versions a signature was seen
in, and example trace ids (newest last). `regressed_at`: when it was seen again after `signatures.resolve_after`
without a sighting (NULL: never). `results.signature`: the signature id of a failing result (NULL for the others
and for every row written before), indexed for the signature's results over time.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None
legacy_version = 4

_NAMES = ("version", "evaluator", "level", "agent", "step_kind", "step_name", "error_type", "template", "example")
_SEEN_IN = ("services", "agents", "models", "variants", "versions", "example_traces")


def upgrade() -> None:
    real = sa.DOUBLE_PRECISION
    op.create_table(
        "signatures",
        sa.Column("id", sa.Text, primary_key=True, nullable=True),
        *(sa.Column(name, sa.Text, nullable=False) for name in _NAMES),
        sa.Column("first_seen", real, nullable=False),
        sa.Column("last_seen", real, nullable=False),
        sa.Column("count", sa.BigInteger, nullable=False),
        *(sa.Column(name, sa.Text, nullable=False) for name in _SEEN_IN),
        sa.Column("regressed_at", real),
    )
    op.create_index("signatures_last_seen", "signatures", ["last_seen"])
    op.create_index("signatures_evaluator", "signatures", ["evaluator", "last_seen"])
    op.add_column("results", sa.Column("signature", sa.Text))
    where = sa.text("signature IS NOT NULL")
    op.create_index("results_signature", "results", ["signature", "created_at"], sqlite_where=where,
                    postgresql_where=where)  # fmt: skip


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
