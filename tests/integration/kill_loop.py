"""The SIGKILL loop of issue 39 (used by tests/integration/test_intake_kill.py, test_intake_postgres.py and
tests/bench/bench_intake_kill.py): the real daemon (its worker processes too) under sustained load from the real
OTel SDK exporter (tests/integration/ack_sender.py), SIGKILLed at random moments and restarted on the same data
directory (or, `meanwhile`, put through something else under that load); at the end, stopped with SIGTERM, the
failing results it stored counted by trace id (SQLite's file, or `stored` for another store)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.integration.conftest import project_env
from tests.integration.daemon_process import ROOT, DaemonProcess

CONFIG = {
    "evaluators": [{"module": "tests.integration.evals_fixture:no_tool_errors"}],
    "assembly": {"quiet_period": "1s"},
    "evaluation": {"workers": 2},
    "intake": {"wal": {"enabled": True}},
}


@dataclass(slots=True)
class KillLoop:
    acked: list[str]  # trace ids acknowledged, in order (a retried batch once)
    rows: Counter[str]  # failing result rows stored per trace id
    kills: int
    seconds: float
    segments_left: int  # intake log files on disk after the final SIGTERM (every trace done: none)

    @property
    def lost(self) -> set[str]:
        return set(self.acked) - set(self.rows)

    @property
    def doubled(self) -> dict[str, int]:
        return {trace_id: n for trace_id, n in self.rows.items() if n > 1}


def kill_group(daemon: DaemonProcess) -> None:
    """SIGKILL the daemon and its worker processes (its process group: `start_in_own_group`)."""
    assert daemon.process is not None
    os.killpg(daemon.process.pid, signal.SIGKILL)
    daemon.process.wait(timeout=30)
    daemon._log.close()


def start_in_own_group(daemon: DaemonProcess, timeout: float = 60) -> DaemonProcess:
    """Start the daemon in a process group of its own (its workers in it too), its output appended to its log."""
    daemon.env["PYTHONUNBUFFERED"] = "1"
    daemon._log = daemon.log_path.open("ab")
    daemon.process = subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "run", "--config", str(daemon.config_path)],
        cwd=daemon.workdir, env=daemon.env, stdout=daemon._log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    return daemon.wait_ready(timeout)


def sqlite_rows(workdir: Path) -> Counter[str]:
    """The failing `no_tool_errors` results in the daemon's SQLite file, counted by trace id."""
    with sqlite3.connect(f"{(workdir / 'results.db').as_uri()}?mode=ro", uri=True) as db:
        return Counter(t for (t,) in db.execute("SELECT trace_id FROM results WHERE evaluator = 'no_tool_errors'"))


def run_kill_loop(
    workdir: Path,
    traces: int,
    kills: int,
    seed: int,
    up: tuple[float, float] = (0.5, 3.0),
    final_kill: bool = False,
    overrides: dict | None = None,
    protocol: str = "grpc",
    stored: Callable[[Path], Counter[str]] = sqlite_rows,
    meanwhile: Callable[[DaemonProcess], None] | None = None,
) -> KillLoop:
    """Send traces while the daemon is SIGKILLed `kills` times, `up` seconds (uniform) after each start (then
    the sender stops), at most `traces` (with no kills nor `meanwhile`: exactly); `final_kill`: SIGKILLed once
    more right after the last acknowledgement (and started again); `meanwhile(daemon)`: run under the load after
    the kills (then the sender stops)."""
    rng = random.Random(seed)
    acked_file, stop_file = workdir / "acked.txt", workdir / "stop-sending"
    daemon = DaemonProcess(workdir, {**CONFIG, **(overrides or {})}, env=project_env())
    started = time.monotonic()
    start_in_own_group(daemon)
    endpoint = f"127.0.0.1:{daemon.grpc_port}" if protocol == "grpc" else f"http://127.0.0.1:{daemon.http_port}"
    sender = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "integration" / "ack_sender.py"), "--endpoint",
         endpoint, "--protocol", protocol, "--traces", str(traces), "--acked", str(acked_file),
         *(["--stop-file", str(stop_file)] if kills or meanwhile else [])],
        env={**os.environ, **project_env()}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        done = 0
        while done < kills and sender.poll() is None:
            time.sleep(rng.uniform(*up))
            kill_group(daemon)
            done += 1
            start_in_own_group(daemon)
        if meanwhile is not None:
            meanwhile(daemon)
        stop_file.touch()
        output, _ = sender.communicate(timeout=600)
        assert sender.returncode == 0, output
        if final_kill:
            kill_group(daemon)
            done += 1
            start_in_own_group(daemon)
        replayed = lambda: daemon.value("agent_monitor_intake_log_replay_segments") == 0  # noqa: E731
        assert daemon.wait_for_condition(replayed, 300), "the intake log's replay did not finish"  # or SIGTERM cuts it
    finally:
        if sender.poll() is None:
            sender.kill()
        daemon.stop(timeout=60)  # SIGTERM: whatever is pending is evaluated and stored
    acked = acked_file.read_text().split()
    left = len(list((workdir / "intake").glob("*.wal")))
    return KillLoop(acked, stored(workdir), done, time.monotonic() - started, left)
