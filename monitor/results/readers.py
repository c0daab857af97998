"""Where a ReviewReader comes from: the daemon's own store, or a store file opened read-only by the CLI.

The two factories are the only places that name the SQLite reader class; until it is part of this build,
the daemon's review answers 503 and `agent-monitor review --store` says what it needs.
"""

from __future__ import annotations

from pathlib import Path

from monitor.results.review_models import ReviewReader
from monitor.results.store import ResultStore

NO_READER = "this build has no SQLite review reader"


class StoreUnreadable(Exception):
    """A store file that cannot be read as a result store (the message says why, in one line)."""


def review_reader(store: ResultStore) -> ReviewReader | None:
    """The reader over the daemon's own `store` (sharing its connection and lock); None when there is none."""
    return None


def open_store_reader(path: str | Path) -> ReviewReader:
    """A reader over the store file `path`, opened read-only (the daemon may be writing it meanwhile).

    StoreUnreadable when the file is not a readable result store (or this build cannot read one)."""
    raise StoreUnreadable(f"reading a store file needs the SQLite review reader ({NO_READER}); use --url instead")
