"""`backend`: each store test that takes it runs on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.backends import Backend, sqlite_backend


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "postgres":
        return Backend("postgres", request.getfixturevalue("postgres_url"))
    return sqlite_backend(tmp_path)
