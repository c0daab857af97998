"""Conversations across restarts of a real daemon on the same SQLite store file: the turns of the recorded support
conversation (3 turns ending in a human handoff), sent one by one through the real OTel SDK exporter, straddle a
SIGTERM (and a SIGKILL): the daemon leaves the conversation open when it stops (no `cut`), the next start
continues it, and it is completed after `sessions.idle` as one conversation with all its turns, evaluated once.
Before each stop the test waits until the turns sent so far are kept in the store (a trace acknowledged but not yet
evaluated at a SIGKILL is the intake log's business, not this test's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import DaemonProcess, read_store
from tests.integration.test_sessions_store import SUPPORT
from tests.support.otlp_json import corpus_traces, otlp_document

pytestmark = pytest.mark.integration
EVALUATORS = [{"name": "error_free"}, {"module": "tests.support.session_evals:no_handoff"}]
IDLE = "20s"  # longer than a restart on a loaded machine: the conversation must not complete while down
SESSIONS = "SELECT session_id, ended, turn_count, turns FROM sessions"


def expected() -> dict:
    return json.loads((SUPPORT / "expected.json").read_text())["sessions"][0]


def turn_directories(tmp_path: Path) -> list[Path]:
    """One corpus directory per turn of the support conversation, in turn order."""
    traces = corpus_traces(SUPPORT.name)
    directories = []
    for n, trace_id in enumerate(expected()["trace_ids"]):
        directory = tmp_path / f"turn{n}"
        directory.mkdir()
        (directory / "traces_0001.json").write_text(json.dumps(otlp_document(traces[trace_id])))
        directories.append(directory)
    return directories


def kept_turns(store: Path) -> int:
    return len(read_store(store, "SELECT trace_id FROM session_turns"))


class Runs:
    """Daemons started one after another on one work directory (one store file), each with its own log."""

    def __init__(self, tmp_path: Path) -> None:
        self.workdir = tmp_path / "daemon"
        self.workdir.mkdir()
        self.store = self.workdir / "results.db"
        self.config = {"evaluators": EVALUATORS, "sessions": {"idle": IDLE}, "evaluation": {"workers": 1},
                       "store": {"results": "all"}}  # fmt: skip
        self.started: list[DaemonProcess] = []

    def start(self) -> DaemonProcess:
        daemon = DaemonProcess(self.workdir, self.config, env=project_env())
        daemon.log_path = self.workdir / f"daemon{len(self.started)}.log"
        self.started.append(daemon)
        return daemon.start()

    def send_turn(self, daemon: DaemonProcess, directory: Path, kept: int) -> None:
        """Send one turn; wait until the store keeps `kept` turns of the open conversation."""
        send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(directory))
        daemon.wait_until(lambda: kept_turns(self.store) == kept, f"{kept} turns kept", timeout=60)

    def stop_all(self) -> None:
        for daemon in self.started:
            daemon.stop()


def kill(daemon: DaemonProcess) -> None:
    assert daemon.process is not None
    daemon.process.kill()  # SIGKILL: no shutdown at all
    daemon.process.wait(timeout=10)
    daemon.stop()  # closes its log


def assert_one_conversation_with_all_its_turns(runs: Runs, daemon: DaemonProcess) -> None:
    want = expected()
    daemon.wait_until(lambda: len(read_store(runs.store, SESSIONS)) >= 1, "the conversation completed", timeout=60)
    [(session_id, ended, turn_count, turns)] = read_store(runs.store, SESSIONS)
    assert (session_id, ended, turn_count) == (want["session_id"], "idle", 3)
    assert [t[0] for t in json.loads(turns)] == want["trace_ids"]
    daemon.wait_until(lambda: daemon.value("agent_eval_results_total", level="session") >= 1, "evaluated", timeout=60)
    results = read_store(runs.store, "SELECT session_id, trace_id, passed FROM results WHERE evaluator = 'no_handoff'")
    assert results == [(want["session_id"], want["trace_ids"][-1], 0)]  # once, the handoff found in the last turn
    assert daemon.value("agent_sessions_completed_total") == 1
    assert daemon.value("agent_eval_results_total", evaluator="no_handoff", level="session", outcome="fail") == 1
    assert read_store(runs.store, "SELECT count(*) FROM session_turns") == [(0,)]


def assert_left_open(runs: Runs, turns: int) -> None:
    """After a stop: the conversation neither cut nor stored, its turns kept open in the store."""
    assert read_store(runs.store, SESSIONS) == []
    assert read_store(runs.store, "SELECT turns, completed_at FROM open_sessions") == [(turns, None)]


def test_a_conversation_straddling_a_sigterm_is_one_conversation_of_3_turns_evaluated_once(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    first_turn, second_turn, third_turn = turn_directories(tmp_path)
    try:
        first = runs.start()
        runs.send_turn(first, first_turn, 1)
        runs.send_turn(first, second_turn, 2)
        assert first.stop() == 0  # SIGTERM
        assert 'reason="shutdown"' not in first.output()
        assert_left_open(runs, 2)

        second = runs.start()
        opened = lambda: second.value("agent_monitor_sessions_open") == 1  # noqa: E731
        second.wait_until(opened, "the open conversation read from the store", timeout=60)
        runs.send_turn(second, third_turn, 3)
        assert_one_conversation_with_all_its_turns(runs, second)
    finally:
        runs.stop_all()


def test_a_conversation_straddling_a_sigkill_and_a_sigterm_is_one_conversation_with_all_its_turns(
    tmp_path: Path,
) -> None:
    runs = Runs(tmp_path)
    first_turn, second_turn, third_turn = turn_directories(tmp_path)
    try:
        first = runs.start()
        runs.send_turn(first, first_turn, 1)
        kill(first)
        assert_left_open(runs, 1)

        second = runs.start()
        runs.send_turn(second, second_turn, 2)
        assert second.stop() == 0  # SIGTERM
        assert_left_open(runs, 2)

        third = runs.start()
        runs.send_turn(third, third_turn, 3)
        assert_one_conversation_with_all_its_turns(runs, third)
    finally:
        runs.stop_all()
