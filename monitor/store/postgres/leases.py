"""Which replica polls each source when every replica shares one PostgreSQL store: the one that holds the source's
session advisory lock (`pg_try_advisory_lock(namespace, hash of the name)`) on a connection of its own.

PostgreSQL releases the lock when that session ends, so a replica that dies (SIGKILL, OOM, a lost node) gives its
sources up at once: its socket closes and the server ends the session. A replica that is alive but stuck (its
process stopped, its event loop blocked, its network cut off) would keep the lock for as long as the server sees
the connection open; so the session also has `idle_session_timeout` = the lease (`store.poll_lease`), and a
heartbeat runs a statement on it every third of that: a holder that stops answering loses its session, and its
sources, after the lease. It finds out at its next statement, and asks again on a new session (where another
replica holds them by then). The checkpoints live in the same database, so whoever takes a source over goes on
from where the last holder stopped.

Every statement is bounded (the server's statement_timeout and a client-side deadline: deadline.py); a failed
one drops the connection (and with it every lock it held) and raises: the caller counts it. Each method runs in a
thread (`asyncio.to_thread`); one lock serialises them on the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import threading
from typing import Any

import psycopg
from sqlalchemy import bindparam, func, literal_column, select

from monitor.store.postgres.connection import APPLICATION_NAME, CONNECTION_ERRORS, Timeouts, redacted
from monitor.store.postgres.deadline import execute_bounded
from monitor.store.statements import POSTGRESQL, Statement, bound

log = logging.getLogger(__name__)

NAMESPACE = 0x61676D6F  # the first key of agent-monitor's two-key advisory locks ("agmo")
HEARTBEATS_PER_LEASE = 3
_PING = Statement(select(literal_column("1")))
_TRY_LOCK = Statement(select(func.pg_try_advisory_lock(bindparam("namespace"), bindparam("key"))))
# The session's idle_session_timeout (milliseconds, as text), as `SET` would set it.
_IDLE_TIMEOUT = Statement(
    select(func.set_config(literal_column("'idle_session_timeout'"), bindparam("ms"), literal_column("false")))
)

# Every lock of the session, released at a clean stop: the server would release them only once it sees the
# session end, which it may do a moment after the client closed its socket (a replica taking over could miss them).
_RELEASE_ALL = Statement(select(func.pg_advisory_unlock_all()))


def lock_key(source: str) -> int:
    """The second key of a source's lock: 32 bits of the SHA-256 of its name (two sources that share a key share
    a poller, which is harmless)."""
    return int.from_bytes(hashlib.sha256(source.encode()).digest()[:4], "big", signed=True)


class PollLeases:
    """The poll sources this replica holds, on one dedicated connection (opened at the first `hold`)."""

    def __init__(self, url: str, lease: float, timeouts: Timeouts | None = None) -> None:
        self.url = url
        self.lease = lease
        self.timeouts = timeouts or Timeouts()
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._heartbeat: asyncio.Task[None] | None = None
        self._closed = False
        self._warned_timeout = False

    async def hold(self, source: str) -> bool:
        """Whether this replica is the poller of `source`: the lock taken when it is free, or confirmed held (a
        round trip: a connection lost since loses it). Raises when the database cannot be asked."""
        if (self._heartbeat is None or self._heartbeat.done()) and not self._closed:
            self._heartbeat = asyncio.create_task(self._beat(), name="poll-leases-heartbeat")
        return await asyncio.to_thread(self._hold, source)

    async def close(self) -> None:
        """Release every lock (the session ends) and stop the heartbeat."""
        self._closed = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        await asyncio.to_thread(self._release)

    # --- on the connection (threads) ------------------------------------------------------------
    def _hold(self, source: str) -> bool:
        """On the open session, or a new one; a session that turns out lost (the server ended it: this replica
        was stuck past the lease, or the server restarted) is replaced once, its locks gone with it."""
        with self._lock:
            if self._closed:
                return False
            reused = self._conn is not None
            try:
                return self._try(source)
            except CONNECTION_ERRORS:
                self._drop_locked()
                if not reused:
                    raise
            try:
                return self._try(source)
            except BaseException:
                self._drop_locked()
                raise

    def _try(self, source: str) -> bool:
        conn = self._connection()
        if source in self._held:
            self._execute(conn, _PING)
            return True
        row = self._execute(conn, _TRY_LOCK, {"namespace": NAMESPACE, "key": lock_key(source)})
        if row is not None and row[0]:
            self._held.add(source)
            return True
        return False

    def _ping(self) -> None:
        with self._lock:
            if self._conn is None:
                return
            try:
                self._execute(self._conn, _PING)
            except Exception as exc:
                if self._held:
                    log.warning("the poll lease connection to %s failed (%s): this replica gives up %s",
                                redacted(self.url), exc, ", ".join(sorted(self._held)))  # fmt: skip
                self._drop_locked()

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        self._held.clear()  # a new session holds nothing
        conn = psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=max(int(self.timeouts.connect), 1),
            application_name=f"{APPLICATION_NAME}-poll-leases",
            options=self.timeouts.options(),
        )
        try:
            self._execute(conn, _IDLE_TIMEOUT, {"ms": str(max(int(self.lease * 1000), 1))})
        except psycopg.errors.UndefinedObject:  # PostgreSQL < 14: only a closed connection frees the sources
            if not self._warned_timeout:
                log.warning("PostgreSQL has no idle_session_timeout (before 14): a replica that is stuck but "
                            "connected keeps its poll sources")  # fmt: skip
                self._warned_timeout = True
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _execute(self, conn: psycopg.Connection[Any], statement: Statement, params: dict | None = None) -> Any:
        return execute_bounded(conn, self.timeouts.deadline(), *bound(statement, POSTGRESQL, params))

    def _drop(self) -> None:
        """The connection closed, its locks left to the server to release when it sees the session end."""
        with self._lock:
            self._drop_locked()

    def _release(self) -> None:
        with self._lock:
            if self._conn is not None and not self._conn.closed and self._held:
                with contextlib.suppress(Exception):  # the session ends just after: its locks go then anyway
                    self._execute(self._conn, _RELEASE_ALL)
            self._drop_locked()

    def _drop_locked(self) -> None:
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    async def _beat(self) -> None:
        """A statement every third of the lease while the connection is open: the session stays (a standby's
        too), and a lost one is seen."""
        while not self._closed:
            await asyncio.sleep(self.lease / HEARTBEATS_PER_LEASE)
            await asyncio.to_thread(self._ping)
