"""Waiting judgements across restarts of a real daemon on the same SQLite store (issue 39: acknowledged means kept):
a trace sent through the real OTel SDK exporter is evaluated, its LLM judgement sent to the fake Gemini server,
which holds the reply; the daemon is SIGKILLed (or SIGTERMed) with the judgement still waiting, and restarted on the
same data directory with the judge answering: the judgement is made again, its result stored exactly once and
counted once in agent_eval_results_total, and nothing is left waiting."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.integration.conftest import CORPUS, project_env, send
from tests.integration.daemon_process import DaemonProcess, read_store
from tests.support.fake_gemini import FakeGemini, FakeRequest, ok

pytestmark = pytest.mark.integration

JUDGE = {"module": "tests.integration.evals_fixture:answer_quality"}
SCENARIO = "oi_openai__tool_agent"
FAST_RETRY = {"attempts": 1, "initial_delay": "10ms", "max_delay": "50ms", "jitter": "0s"}
VERDICT = {"score": 0.2, "verdict": "fail", "explanation": "judged after the restart"}
JUDGED = "SELECT trace_id, passed, explanation FROM results WHERE evaluator = 'answer_quality'"
PENDING = "SELECT kind, owner FROM pending_judgements"


class HeldJudge:
    """The fake Gemini's handler: holds every reply until `answering` is set, then fails the answer."""

    def __init__(self) -> None:
        self.answering = threading.Event()

    def __call__(self, request: FakeRequest):
        self.answering.wait(60)
        return ok(VERDICT, prompt_tokens=50, output_tokens=10)


class Runs:
    """Daemons started one after another on one work directory (one store file), judged by one fake Gemini."""

    def __init__(self, tmp_path: Path, fake: FakeGemini, **overrides) -> None:
        self.workdir = tmp_path / "daemon"
        self.workdir.mkdir()
        self.store = self.workdir / "results.db"
        judges = {"gemini_api_key": "test-key", "base_url": fake.url, "retry": FAST_RETRY}
        self.config = {"evaluators": [JUDGE], "judges": judges, "evaluation": {"workers": 1},
                       "shutdown": {"grace_period": "2s"}, **overrides}  # fmt: skip
        self.started: list[DaemonProcess] = []

    def start(self) -> DaemonProcess:
        daemon = DaemonProcess(self.workdir, self.config, env=project_env())
        daemon.log_path = self.workdir / f"daemon{len(self.started)}.log"
        self.started.append(daemon)
        return daemon.start()

    def stop_all(self) -> None:
        for daemon in self.started:
            daemon.stop()


def judgement_waiting(runs: Runs, fake: FakeGemini) -> DaemonProcess:
    """The first run: one trace sent, its judgement sent to the judge (who holds it) and kept in the store."""
    first = runs.start()
    send("grpc", f"127.0.0.1:{first.grpc_port}", "corpus", str(CORPUS / SCENARIO))
    first.wait_until(lambda: len(fake.requests) == 1, "the judgement sent")
    first.wait_until(lambda: len(read_store(runs.store, PENDING)) == 1, "the waiting judgement kept")
    return first


def assert_judged_once_after_the_restart(runs: Runs, fake: FakeGemini, held: HeldJudge) -> None:
    [(trace_id,)] = read_store(runs.store, "SELECT trace_id FROM traces")
    held.answering.set()
    second = runs.start()
    counted = lambda: second.value("agent_eval_results_total", evaluator="answer_quality")  # noqa: E731
    second.wait_until(lambda: counted() >= 1, "the resumed judgement counted")
    second.wait_until(lambda: read_store(runs.store, PENDING) == [], "the waiting judgement forgotten")
    assert read_store(runs.store, JUDGED) == [(trace_id, 0, "judged after the restart")]  # stored once
    assert second.value("agent_eval_results_total", evaluator="answer_quality", outcome="fail") == 1
    assert counted() == 1  # counted once: no judge_unavailable skip for the run that stopped
    assert second.value("agent_monitor_judge_resumed_total", kind="judgement", outcome="resumed") == 1
    assert second.value("agent_monitor_judge_requests_total", judge="answer_quality", status="ok") == 1
    assert second.value("agent_monitor_traces_evaluated_total") == 0  # the trace was stored: not evaluated again
    assert second.stop() == 0

    third = runs.start()  # nothing left: the next start sends nothing again, stores nothing twice
    assert third.value("agent_monitor_judge_resumed_total", kind="judgement", outcome="resumed") == 0
    assert len(read_store(runs.store, JUDGED)) == 1


def test_a_judgement_waiting_at_a_sigkill_is_done_once_after_the_restart(tmp_path: Path) -> None:
    """With the intake log on: its replay neither evaluates the stored trace again nor asks its judge twice."""
    held = HeldJudge()
    with FakeGemini(held) as fake:
        runs = Runs(tmp_path, fake, intake={"wal": {"enabled": True}})
        try:
            first = judgement_waiting(runs, fake)
            assert first.process is not None
            first.process.kill()  # SIGKILL: no shutdown at all
            first.process.wait(timeout=10)
            first.stop()
            assert read_store(runs.store, JUDGED) == [] and len(read_store(runs.store, PENDING)) == 1
            assert_judged_once_after_the_restart(runs, fake, held)
        finally:
            held.answering.set()
            runs.stop_all()


def test_a_judgement_waiting_past_the_sigterm_grace_is_kept_and_done_once_after_the_restart(tmp_path: Path) -> None:
    held = HeldJudge()
    with FakeGemini(held) as fake:
        runs = Runs(tmp_path, fake)
        try:
            first = judgement_waiting(runs, fake)
            assert first.stop() == 0  # SIGTERM: the judgement still waits after the grace period
            assert "kept for the next start" in first.output()
            assert read_store(runs.store, JUDGED) == []  # not a judge_unavailable skip
            assert len(read_store(runs.store, PENDING)) == 1
            assert_judged_once_after_the_restart(runs, fake, held)
        finally:
            held.answering.set()
            runs.stop_all()
