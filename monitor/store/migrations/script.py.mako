"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}

Frozen code: write it with `op` and SQLAlchemy types only (never monitor/store/tables.py, which follows the
latest schema); branch on `op.get_bind().dialect.name` only where the two databases really differ. Set
`legacy_version`: the version an older release's marker must show for it to use a database at this revision
(the previous revision's while the tables it reads and writes are unchanged; one more when they change, so that
an older release refuses it). Update tables.py and tests/fixtures/store_schema (python -m tests.support.store_schema).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
${imports if imports else ""}
revision = "${up_revision}"
down_revision = ${'"%s"' % down_revision if isinstance(down_revision, str) else repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}
legacy_version = 9


def upgrade() -> None:
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    raise NotImplementedError("the store's schema is not downgraded: an older release refuses a newer database")
