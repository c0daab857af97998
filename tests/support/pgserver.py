"""A real PostgreSQL server (Debian `postgresql`) for the tests: `initdb` in a temporary directory, started on a
free loopback port as an unprivileged user (PostgreSQL refuses to run as root), one fresh database per test,
stopped at the end of the session. `make test` installs the package when it is missing; without it the tests
that need it fail with that hint (they are not skipped)."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.ports import free_port

MAKE_HINT = "`make test` installs the Debian package postgresql"
_databases = itertools.count()


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if not found:
        pytest.fail(f"PostgreSQL's initdb is not installed: {MAKE_HINT}")
    return Path(found[-1]).parent


DEFAULT_SETTINGS = {"fsync": "off", "max_connections": "200"}  # fsync off: the tests' data is thrown away


class PostgresServer:
    """One server: `url(db)` for a database on it, `new_database()` for a fresh one. `settings`: server settings
    over DEFAULT_SETTINGS (a benchmark runs with `fsync` on, as a production server does)."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self.bin = _bin_dir()
        self.home = Path(tempfile.mkdtemp(prefix="agent-monitor-pg-"))
        self.data = self.home / "data"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.user: str | None = None
        if os.geteuid() == 0:  # initdb and postgres refuse root: run them as the package's user, else nobody
            self.user = next((u for u in ("postgres", "nobody") if _user_exists(u)), None)
            if self.user is None:
                pytest.fail("running as root and there is neither a postgres nor a nobody user to run PostgreSQL as")
            entry = pwd.getpwnam(self.user)
            os.chown(self.home, entry.pw_uid, entry.pw_gid)
        os.chmod(self.home, 0o700)

    def _initdb(self, attempts: int = 3) -> None:
        """Create the cluster; a run killed by a signal (Debian's initdb has been seen to die of SIGSEGV under
        load) is retried on a clean directory, a real failure (non-zero exit) is raised at once."""
        for attempt in range(attempts):
            done = subprocess.run(
                [str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                 "--no-sync"],
                capture_output=True, user=self.user, cwd=self.home,
            )  # fmt: skip
            if done.returncode >= 0 or attempt == attempts - 1:
                done.check_returncode()
                return
            shutil.rmtree(self.data, ignore_errors=True)

    def start(self, timeout: float = 30.0) -> PostgresServer:
        self._initdb()
        return self._launch(timeout)

    def _launch(self, timeout: float) -> PostgresServer:
        log = self.home / "postgres.log"
        settings = [arg for name, value in self.settings.items() for arg in ("-c", f"{name}={value}")]
        with log.open("ab") as stderr:  # the child keeps its own descriptor
            self.process = subprocess.Popen(
                [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.home}", *settings],
                stdout=subprocess.DEVNULL, stderr=stderr, user=self.user, cwd=self.home,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("postgres exited:\n" + log.read_text(errors="replace")[-4000:])
            try:
                with psycopg.connect(self.url("postgres"), connect_timeout=2):
                    return self
            except psycopg.OperationalError:
                time.sleep(0.1)
        raise RuntimeError("postgres did not accept connections:\n" + log.read_text(errors="replace")[-4000:])

    def halt(self) -> None:
        """Stop the server (fast shutdown: the clients connected are cut off, a transaction running is rolled
        back), its data kept: `resume` starts it again on the same port."""
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        self.process.wait(30)

    def resume(self, timeout: float = 30.0) -> PostgresServer:
        """Start the server `halt` stopped, on its data and port."""
        return self._launch(timeout)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new empty database; its URL."""
        name = f"t{os.getpid()}_{next(_databases)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown: clients still connected are cut off
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        shutil.rmtree(self.home, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        yield server.start()
    finally:
        server.stop()
