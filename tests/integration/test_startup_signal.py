"""SIGTERM during start-up is a stop, not a failure: the daemon exits 0 without a traceback or BrokenProcessPool.

A signal sent to the daemon's process group (Ctrl-C, `kill -- -PGID`, some supervisors) reaches the evaluation
workers being started too, and they die: here the daemon and each of its worker processes get SIGTERM while the
workers are still importing their evaluators (tests/integration/slow_start_fixture.py keeps them at it).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess

pytestmark = pytest.mark.integration


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found += [int(child) for child in text.split()]
    return found


def _workers(pid: int) -> list[int]:
    """The spawned multiprocessing children of `pid` (its evaluation workers)."""
    workers = []
    for child in _children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            workers.append(child)
    return workers


def test_sigterm_while_the_workers_start_exits_cleanly(tmp_path: Path) -> None:
    config = {
        "evaluators": [{"module": "tests.integration.slow_start_fixture:slow_start"}],
        "evaluation": {"workers": 2},
    }
    daemon = DaemonProcess(tmp_path, config, env=project_env()).launch()
    assert daemon.process is not None
    try:
        deadline = time.monotonic() + 60
        while len(workers := _workers(daemon.process.pid)) < 2 and time.monotonic() < deadline:
            assert daemon.process.poll() is None, daemon.output()
            time.sleep(0.1)
        assert len(workers) == 2, daemon.output()
        time.sleep(1.0)  # the daemon waits for them: they import slow_start_fixture for 20 s
        # What a signal to the process group does to workers that have not yet set their own handling: they die.
        # (A worker that has already set it ignores SIGTERM, and the daemon stops once it has started: whether the
        # signal comes first is a race, so the workers' death is made certain with SIGKILL.)
        os.kill(daemon.process.pid, signal.SIGTERM)
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        code = daemon.process.wait(timeout=30)
    finally:
        daemon.stop()
    output = daemon.output()
    assert code == 0, output
    assert "stop requested during start-up" in output
    assert "BrokenProcessPool" not in output and "cannot start" not in output and "Traceback" not in output
