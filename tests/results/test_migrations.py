"""The store's one migration chain (monitor/store/migrations) on both databases: a fresh database gets the schema
the earlier releases' hand-written chains made (tests/fixtures/store_schema), and a database an earlier release
left at any version is upgraded to it, its rows kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg

from tests.results.legacy_schema import LATEST, postgres_at, sqlite_at
from tests.results.store_schema import fixture, postgres_schema, sqlite_schema


def test_the_frozen_legacy_chains_make_the_captured_schema(tmp_path: Path, postgres_url: str) -> None:
    """The fixtures were captured from the code before the chain (6c02950); its frozen copy makes them still."""
    db = sqlite3.connect(tmp_path / "r.db")
    sqlite_at(db, LATEST)
    assert sqlite_schema(db) == fixture("sqlite")
    db.close()
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        postgres_at(pg, LATEST, judge_limits=True)
        assert postgres_schema(pg) == fixture("postgresql")
