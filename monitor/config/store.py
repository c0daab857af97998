"""`store:` — the result store (SQLite or PostgreSQL), its bounds and timeouts."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from monitor.text import redact_url

from .units import Duration, MiB, Section, Size


class StoreConfig(Section):
    """The result store: what the review reads. SQLite at `path` (the embedded default: one file per replica), or
    PostgreSQL at `url` (`postgresql://user@host:5432/db`: one database every replica writes and reads; `path` is
    then unused; the password from the URL or $PGPASSWORD). `retention` and `max_size` bound it (the oldest go
    first); `max_steps` bounds the step tree kept per trace; `pool_size`: PostgreSQL connections per process;
    `connect_timeout`, `statement_timeout`, `lock_timeout`: PostgreSQL's bounds on a connection attempt, a
    statement and a wait for a lock (a server that hangs is given up on too: store/postgres/connection.py);
    `poll_lease`: with PostgreSQL, a replica that stops answering for that long gives up the poll sources it
    polls (store/postgres/leases.py); `reopen_interval`: how long a store that failed waits before it is opened
    again."""

    enabled: bool = True
    path: str = "data/results.db"
    url: str | None = Field(default=None, repr=False)
    pool_size: Annotated[int, Field(ge=1, le=100)] = 4
    connect_timeout: Duration = 5.0
    statement_timeout: Duration = 10.0
    lock_timeout: Duration = 5.0
    poll_lease: Annotated[Duration, Field(ge=3.0)] = 30.0
    reopen_interval: Annotated[Duration, Field(ge=1.0)] = 30.0
    retention: Duration = 7 * 86400.0
    max_size: Size = 1024 * MiB
    results: Literal["all", "failing"] = "all"
    max_steps: Annotated[int, Field(ge=0, le=10_000)] = 200

    @field_validator("url")
    @classmethod
    def _postgresql_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in ("postgresql", "postgres"):
            raise ValueError("must be a PostgreSQL URL, postgresql://user@host:5432/database (SQLite: use `path`)")
        import psycopg  # here, not at the top: a quarter of a second of imports that SQLite users never need
        from psycopg.conninfo import conninfo_to_dict

        try:
            conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise ValueError(f"is not a valid PostgreSQL URL: {str(exc).splitlines()[0]}") from None
        return url

    @property
    def location(self) -> str:
        """Where the store is, for messages: the path, or the URL without its password."""
        if self.url is None:
            return self.path
        return redact_url(self.url)
