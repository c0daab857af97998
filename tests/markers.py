"""The `integration` marker, derived and enforced: a test that starts a process, a server or a browser is marked.

A test is marked when it uses one of `SERVER_FIXTURES` (so a test on the PostgreSQL or Phoenix fixture cannot
forget), or by its module's `pytestmark` / its own decorator. Every test is watched while it runs: one that
starts a process (`subprocess`, `multiprocessing`), listens on a socket or starts a gRPC server without the marker
fails at teardown, naming what it started. `make check` runs every unmarked test, so they stay in-memory and fast.
"""

from __future__ import annotations

import multiprocessing.process
import socket
import subprocess
import sys
from collections.abc import Callable, Generator
from typing import Any

import pytest

MARKER = "integration"

# Fixtures that start a server (or hand out one that was started for the session): a test using one is marked.
SERVER_FIXTURES = frozenset(
    {
        "postgres_server",
        "postgres_url",
        "phoenix",
        "daemon_factory",
        "review_site",
        "backend",  # tests/monitor/conftest.py: SQLite and PostgreSQL, one parameter each
    }
)

_started: list[str] = []  # what the running test (setup, call, teardown) started


def _watch(owner: Any, name: str, describe: Callable[..., str | None]) -> None:
    original = getattr(owner, name)

    def watched(*args: Any, **kwargs: Any) -> Any:
        started = describe(*args, **kwargs)
        if started is not None:
            _started.append(started)
        return original(*args, **kwargs)

    setattr(owner, name, watched)


def _in_library_lookup() -> bool:
    """Whether ctypes.util.find_library is running (it runs `ldconfig -p`, or a compiler, the first time a module
    that loads a shared library by name is imported: whichever test imports it first, marked or not)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == "ctypes.util":
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _process(_self: Any, args: Any = None, *_a: Any, **kwargs: Any) -> str | None:
    if _in_library_lookup():
        return None
    command = args if args is not None else kwargs.get("args")
    first = command[0] if isinstance(command, list | tuple) and command else command
    return f"the process {first!s}"


def install() -> None:
    """Watch the ways a test starts something: processes, listening sockets, gRPC servers."""
    _watch(subprocess.Popen, "__init__", _process)
    _watch(multiprocessing.process.BaseProcess, "start", lambda self: f"the worker process {self.name}")
    _watch(socket.socket, "listen", lambda self, *_: f"a server listening on {self.getsockname()}")
    for server in _grpc_server_classes():
        _watch(server, "start", lambda *_: "a gRPC server")


def _grpc_server_classes() -> list[type]:
    from grpc import _server as sync_server
    from grpc.aio import _server as aio_server

    return [sync_server._Server, aio_server.Server]


def pytest_configure(config: pytest.Config) -> None:
    install()


def _starts_a_server(item: pytest.Item) -> bool:
    """On a server fixture, or on the `postgres` value of a fixture parametrized by backend (which asks for
    `postgres_url` with `request.getfixturevalue`, out of sight of the fixture names)."""
    if SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgres" in callspec.params.values()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.get_closest_marker(MARKER) and _starts_a_server(item):
            item.add_marker(MARKER)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    _started.clear()
    return (yield)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    result = yield
    if _started and not item.get_closest_marker(MARKER):
        started = sorted(set(_started))
        _started.clear()
        pytest.fail(
            f"{item.nodeid} started {', '.join(started[:3])} without the `{MARKER}` marker: mark the test or its "
            f"module (pytestmark = pytest.mark.{MARKER}), or, for a fixture that starts a server, add it to "
            "tests/markers.py SERVER_FIXTURES",
            pytrace=False,
        )
    return result
