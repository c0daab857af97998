"""Disk full for the intake log (issue 39), end to end: the real daemon, its intake log's directory on a small
filesystem (a tmpfs mount; where mounting is refused, a file size limit on the daemon's main process: EFBIG), its
SQLite store elsewhere, takes traces from the real OTel SDK exporters (OTLP/gRPC and OTLP/HTTP at once, each
batch exported once: the exporter's own retries on the throttled answer are its only chance). The filesystem is
filled until intake is throttled (the `no_space` errors counted, both exporters retrying), kept full a while, then
emptied: intake resumes by itself, every trace an exporter got acknowledged is stored exactly once, none lost, no
export given up, and the daemon never died; SIGKILLed right after the last acknowledgement and restarted, the
log it wrote through the spell is replayed whole."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import ROOT, DaemonProcess
from tests.integration.full_disk import FileSizeLimit, SmallFilesystem, mount_tmpfs, unmount
from tests.integration.kill_loop import kill_group, start_in_own_group

pytestmark = pytest.mark.integration

PROTOCOLS = ("grpc", "http")
HELD_FULL_SECONDS = 2.0  # full this long after both receivers answered throttled (the exporters retry 5 times, 1 s
# apart as the daemon's answer asks: a batch is given up past ~5 s of throttling)
EXPORTER_TIMEOUT = 20.0  # above the exporter's 5 retries, so the timeout never cuts them short


def _config(log_directory: Path, sync: str) -> dict:
    return {
        "evaluators": [{"module": "tests.integration.evals_fixture:no_tool_errors"}],
        "evaluation": {"workers": 1},
        # Longer than the full spell: the traces of the segment being written keep it held (not rolled) meanwhile.
        "assembly": {"quiet_period": "4s"},
        "intake": {"wal": {"enabled": True, "path": str(log_directory), "segment_bytes": "256KiB", "sync": sync}},
    }


def _until(condition: Callable[[], bool], timeout: float, what: str, tick: Callable[[], object] = int) -> float:
    """Poll `condition` every 0.1 s (calling `tick` between) until it holds; the seconds it took."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        tick()
        time.sleep(0.1)
    return time.monotonic() - started


def _lines(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def _sender(daemon: DaemonProcess, protocol: str, acked: Path, stats: Path, stop_file: Path) -> subprocess.Popen:
    """tests/integration/ack_sender.py: a batch of 10 traces every 50 ms, each exported once (`--give-up`)."""
    endpoint = f"127.0.0.1:{daemon.grpc_port}" if protocol == "grpc" else f"http://127.0.0.1:{daemon.http_port}"
    command = [sys.executable, str(ROOT / "tests" / "integration" / "ack_sender.py"), "--protocol", protocol]
    command += ["--endpoint", endpoint, "--traces", "1000000", "--acked", str(acked), "--interval", "0.05"]
    command += ["--timeout", str(EXPORTER_TIMEOUT), "--give-up", "--stats", str(stats), "--stop-file", str(stop_file)]
    env = {**os.environ, **project_env()}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _throttled(daemon: DaemonProcess, receiver: str) -> float:
    return daemon.value("agent_monitor_requests_total", receiver=receiver, code="UNAVAILABLE")


def _full_spell(daemon: DaemonProcess, full: SmallFilesystem | FileSizeLimit, acked: dict[str, Path]) -> dict:
    """Fill until a write fails for want of space and both receivers answer throttled, keep it full for
    `HELD_FULL_SECONDS`, empty it, wait until both protocols are acknowledged again, then one more second; the
    seconds each took."""
    full.fill()
    filled = time.monotonic()
    throttled_after = _until(
        lambda: (
            daemon.value("agent_monitor_intake_log_errors_total", kind="no_space") > 0
            and all(_throttled(daemon, p) > 0 for p in PROTOCOLS)
        ),
        15,
        "a write failed for want of space and both receivers answered throttled",
        full.top_up,
    )
    _until(lambda: time.monotonic() - filled > throttled_after + HELD_FULL_SECONDS, 5, "held full", full.top_up)
    at_release = {p: _lines(acked[p]) for p in PROTOCOLS}
    full.empty()
    emptied = time.monotonic()
    resumed_after = _until(
        lambda: all(_lines(acked[p]) > at_release[p] for p in PROTOCOLS), 15, "intake resumed on both protocols"
    )
    _until(lambda: time.monotonic() - emptied > resumed_after + 1, 5, "one more second of intake")
    return {"full": emptied - filled, "throttled_after": throttled_after, "resumed_after": resumed_after}


@pytest.fixture
def log_directory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The intake log's directory and how it is filled: on a 4 MiB tmpfs ("tmpfs"); where mounting is refused (a
    container), a plain directory filled by the file size limit instead, with a warning saying so ("rlimit")."""
    directory = tmp_path / "intake-log"
    refused = mount_tmpfs(directory, "4m") if request.param == "tmpfs" else "not asked for"
    if refused is None:
        try:
            yield "tmpfs", directory
        finally:
            unmount(directory)
        return
    if request.param == "tmpfs":
        warnings.warn(f"no tmpfs here ({refused}): the log's disk filled by RLIMIT_FSIZE instead", stacklevel=1)
    directory.mkdir(exist_ok=True)
    yield "rlimit", directory


# `batch` (the default) writes on the event loop, `always` on the writer thread (and fsyncs before the answer).
CASES = [("tmpfs", "batch"), ("tmpfs", "always"), ("rlimit", "batch")]


@pytest.mark.parametrize(("log_directory", "sync"), CASES, indirect=["log_directory"])
def test_disk_full_for_the_log_throttles_intake_loses_nothing_acknowledged_and_recovers(
    tmp_path: Path, log_directory: tuple[str, Path], sync: str
) -> None:
    method, directory = log_directory
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    daemon = start_in_own_group(DaemonProcess(workdir, _config(directory, sync), env=project_env()))
    stop_file = tmp_path / "stop-sending"
    acked = {p: tmp_path / f"acked-{p}.txt" for p in PROTOCOLS}
    stats = {p: tmp_path / f"stats-{p}.json" for p in PROTOCOLS}
    senders = {p: _sender(daemon, p, acked[p], stats[p], stop_file) for p in PROTOCOLS}
    assert daemon.process is not None
    pid = daemon.process.pid
    full = SmallFilesystem(directory) if method == "tmpfs" else FileSizeLimit(directory, pid, daemon.log_path)
    try:
        _until(lambda: all(_lines(acked[p]) >= 100 for p in PROTOCOLS), 30, "100 traces acknowledged on each protocol")

        spell = _full_spell(daemon, full, acked)
        stop_file.touch()
        for p, sender in senders.items():
            output, _ = sender.communicate(timeout=60)
            assert sender.returncode == 0, f"{p} sender: {output}"
        assert daemon.process.poll() is None, f"the daemon died:\n{daemon.output()}"
        failed_writes = daemon.value("agent_monitor_intake_log_errors_total", kind="no_space")
        answers = {p: _throttled(daemon, p) for p in PROTOCOLS}
        store_errors = daemon.value("agent_monitor_store_errors_total")
        # SIGKILLed right after the last acknowledgement (most traces not evaluated yet: the quiet period) and
        # restarted: what the log kept through the full spell is replayed.
        kill_group(daemon)
        start_in_own_group(daemon)
        replay_done = lambda: daemon.value("agent_monitor_intake_log_replay_segments") == 0  # noqa: E731
        assert daemon.wait_for_condition(replay_done, 60), "the replay did not finish"  # (SIGTERM would cut it)
        replayed = daemon.value("agent_monitor_intake_log_records_replayed_total")
        assert daemon.stop(timeout=60) == 0, daemon.output()  # SIGTERM: what is pending is evaluated and stored
        segments_left = len(list(directory.glob("*.wal")))
    finally:
        full.empty()
        for sender in senders.values():
            if sender.poll() is None:
                sender.kill()
                sender.wait(10)
        daemon.stop()
    sent = {p: json.loads(stats[p].read_text()) for p in PROTOCOLS}
    acknowledged = [t for p in PROTOCOLS for t in acked[p].read_text().split()]
    with sqlite3.connect(f"{(workdir / 'results.db').as_uri()}?mode=ro", uri=True) as db:
        rows = Counter(t for (t,) in db.execute("SELECT trace_id FROM results WHERE evaluator = 'no_tool_errors'"))
    lost = set(acknowledged) - set(rows)
    doubled = {t: n for t, n in rows.items() if n > 1}
    print(
        f"\n{method}, sync {sync}: full {spell['full']:.1f} s (throttled after {spell['throttled_after']:.1f} s), "
        f"{failed_writes:.0f} writes failed, throttled answers {answers}, exporters {sent}, intake resumed "
        f"{spell['resumed_after']:.1f} s after space returned; {len(acknowledged)} traces acknowledged, "
        f"{len(lost)} lost, {len(doubled)} stored twice ({replayed:.0f} requests replayed after a SIGKILL)"
    )
    assert all(n > 0 for n in answers.values())
    assert all(s["exporter_retries"] > 0 for s in sent.values()), sent  # each exporter saw the throttled answers
    assert all(s["given_up"] == 0 for s in sent.values()), sent  # and its retries carried every batch through
    assert len(set(acknowledged)) == len(acknowledged) > 0
    assert not lost, f"{len(lost)} acknowledged traces lost"
    assert not doubled, f"{len(doubled)} traces stored twice"
    assert store_errors == 0  # the store, elsewhere, never failed
    assert replayed > 0  # the kill left traces to the log
    assert segments_left == 0  # every segment released once its traces were stored
