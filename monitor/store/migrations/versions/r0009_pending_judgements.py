"""Legacy version 9: the judgements still waiting for the judge model, the same on both databases.

`pending_judgements`: an LLM judge's JudgeJob (`kind` judgement) or a pairwise offer waiting for its partner or
being judged (`pair_offer`), kept until its result is written so that a restart does it (monitor/engine/
pending.py). `created_at`: when it was submitted or offered (epoch seconds: a pairwise window and
`judges.pending_max_age` run on across a restart); `owner`: the replica that holds it (the daemon's id for this
run); `payload`: the job as JSON, its texts masked like everything the store keeps. A row goes in the transaction
that writes its result. `pending_owners`: with PostgreSQL, each replica's heartbeat, so that a replica adopts the
waiting judgements of one that is gone.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None
legacy_version = 9


def upgrade() -> None:
    real = sa.DOUBLE_PRECISION
    op.create_table(
        "pending_judgements",
        sa.Column("id", sa.Text, primary_key=True, nullable=True),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("created_at", real, nullable=False),
        sa.Column("owner", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.create_index("pending_judgements_owner", "pending_judgements", ["owner", "created_at"])
    op.create_table(
        "pending_owners",
        sa.Column("owner", sa.Text, primary_key=True, nullable=True),
        sa.Column("seen_at", real, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
