"""Where the CLI's ReviewReader comes from: a store file opened read-only (`agent-monitor review --store FILE`).
The daemon's own reader is `ResultStore.reader()`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from monitor.results.health import StoreUnavailable
from monitor.results.review_models import ReviewReader
from monitor.results.review_reader import SQLiteReviewReader


class StoreUnreadable(Exception):
    """A store file that cannot be read as a result store (the message says why, in one line)."""


def open_store_reader(path: str | Path) -> ReviewReader:
    """A reader over the store file `path`, opened read-only (the daemon may be writing it meanwhile).

    StoreUnreadable when the file is not a readable result store."""
    try:
        return SQLiteReviewReader.open(path)
    except (StoreUnavailable, sqlite3.Error, OSError) as exc:
        raise StoreUnreadable(f"cannot read the result store {path}: {exc}") from exc
