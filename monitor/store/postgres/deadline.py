"""Client-side deadlines on PostgreSQL connections: a server that hangs (stopped, its host frozen, a network that
drops packets silently) enforces no statement_timeout, and libpq waits for its answer forever. While a connection
is used under `DEADLINES.bounded(conn, seconds)`, a watchdog thread shuts its socket down once the time is up
(each `renew` of the lease sets it again: a bound per statement, not per use): the call waiting on it fails at once
with psycopg.OperationalError, and the pool discards the connection. The lease then says it `expired`: the store
tells a statement cut by its deadline from a connection lost otherwise by that (`DeadlineExceeded`), not by the
message libpq gives.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg

log = logging.getLogger(__name__)

TICK_SECONDS = 0.25  # how often the watchdog looks (a deadline is kept to within this)


class DeadlineExceeded(psycopg.OperationalError):
    """A statement outlived its client-side deadline: the connection was cut under it (the server hangs)."""


class Lease:
    """One connection's use under a deadline; `expired` once the watchdog cut the connection."""

    __slots__ = ("_deadlines", "_key", "conn", "expired")

    def __init__(self, deadlines: Deadlines, key: int, conn: Any) -> None:
        self._deadlines = deadlines
        self._key = key
        self.conn = conn
        self.expired = False

    def renew(self, seconds: float) -> None:
        """The connection may be used for `seconds` from now (a new statement starts)."""
        self._deadlines._set(self._key, time.monotonic() + seconds, self)


class Deadlines:
    """The connections in use and when each must be done; one watchdog thread, started at the first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[int, tuple[float, Lease]] = {}  # id → (time.monotonic() deadline, the lease)
        self._ids = itertools.count()
        self._watchdog: threading.Thread | None = None
        self.cut = 0  # connections cut so far

    @contextlib.contextmanager
    def bounded(self, conn: Any, seconds: float) -> Iterator[Lease]:
        """Use `conn` for at most `seconds` (then its socket is shut down), or as long as the lease is renewed."""
        lease = Lease(self, next(self._ids), conn)
        lease.renew(seconds)
        try:
            yield lease
        finally:
            with self._lock:
                self._active.pop(lease._key, None)

    def _set(self, key: int, deadline: float, lease: Lease) -> None:
        with self._lock:
            self._active[key] = (deadline, lease)
            if self._watchdog is None or not self._watchdog.is_alive():
                self._watchdog = threading.Thread(target=self._watch, name="postgres-deadlines", daemon=True)
                self._watchdog.start()

    def _watch(self) -> None:
        while True:
            time.sleep(TICK_SECONDS)
            now = time.monotonic()
            with self._lock:  # held while cutting: a connection is cut only while it is still in use here
                for key, (deadline, lease) in list(self._active.items()):
                    if now >= deadline:
                        del self._active[key]
                        self._cut(lease)

    def _cut(self, lease: Lease) -> None:
        conn = lease.conn
        if conn.closed:
            return
        # Said before the cut: the thread waiting on the connection wakes the moment its socket is shut down,
        # and looks at `expired` at once.
        lease.expired = True
        try:
            with socket.socket(fileno=os.dup(conn.pgconn.socket)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError) as exc:  # closed in between: nothing waits on it any more
            lease.expired = False
            log.debug("could not cut a PostgreSQL connection past its deadline: %r", exc)
            return
        self.cut += 1


DEADLINES = Deadlines()


def execute_bounded(conn: Any, seconds: float, sql: str, params: Any = ()) -> Any:
    """Run one statement on `conn` under a deadline of `seconds`; its first row (None: no row, or no result)."""
    with DEADLINES.bounded(conn, seconds):
        cursor = conn.execute(sql, params)
        return cursor.fetchone() if cursor.description is not None else None
