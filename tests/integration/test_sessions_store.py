"""Conversations in the result store end to end: a real daemon fed the recorded conversations through the real OTel
SDK exporter completes them after `sessions.idle`, and each evaluated session ends up in its SQLite store file as
one `sessions` row (its turns in order, their trace ids, the session's source) with its session-level results in
`results` (`session_id`, the last turn's trace id): the rules' (`store.results: all`: every session) and the
session judges' answered by the fake Gemini server (`results: failing`: the frustrated conversation only)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.conftest import send
from tests.integration.daemon_process import read_store

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
SUPPORT = CORPUS / "oi_openai__session_support"
INTERLEAVED = CORPUS / "otel_genai__session_interleaved"


def expected_sessions() -> dict[str, dict]:
    found = {}
    for scenario in (SUPPORT, INTERLEAVED):
        for s in json.loads((scenario / "expected.json").read_text())["sessions"]:
            found[s["session_id"]] = s
    return found


def expected_sessions_support() -> str:
    return json.loads((SUPPORT / "expected.json").read_text())["sessions"][0]["session_id"]


def wait_rows(daemon, path: Path, sql: str, count: int, timeout: float = 60.0) -> list[tuple]:
    """The rows of `sql` once there are `count` of them (a bounded poll)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = read_store(path, sql)
        if len(rows) >= count:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"{len(read_store(path, sql))} rows of {sql!r}, not {count}\n{daemon.output()}")


SESSIONS = "SELECT session_id, source, ended, turn_count, failed, completed_at, turns FROM sessions ORDER BY session_id"


def test_completed_conversations_are_stored_with_their_turns_and_rule_results(daemon_factory) -> None:
    started = time.time()
    evaluators = [{"name": "error_free"}, {"module": "tests.support.session_evals:no_handoff"}]
    config = {"evaluation": {"workers": 1}, "sessions": {"idle": "2s"}, "store": {"results": "all"}}
    daemon = daemon_factory(config, evaluators=evaluators)
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(SUPPORT), str(INTERLEAVED))
    store = daemon.workdir / "results.db"

    stored = wait_rows(daemon, store, SESSIONS, 3)
    expected = expected_sessions()
    assert {row[0] for row in stored} == set(expected)
    for session_id, source, ended, turn_count, failed, completed_at, turns in stored:
        want = expected[session_id]
        assert (source, ended, turn_count) == (want["attribute"], "idle", want["turns"])
        assert [t[0] for t in json.loads(turns)] == want["trace_ids"]  # the turns in start order
        assert started <= completed_at <= time.time()
        assert failed == (1 if session_id == expected_sessions_support() else 0)

    results = wait_rows(
        daemon, store, "SELECT session_id, trace_id, passed FROM results WHERE evaluator = 'no_handoff'", 3
    )
    assert all(row[1] == expected[row[0]]["trace_ids"][-1] for row in results)  # on the last turn's trace
    assert sorted(row[2] for row in results) == [0, 1, 1]
    assert read_store(store, "SELECT COUNT(*) FROM results WHERE level = 'session' AND session_id IS NULL") == [(0,)]
    assert read_store(store, "SELECT COUNT(*) FROM results WHERE level = 'trace' AND session_id IS NOT NULL") == [(0,)]


def test_session_judges_verdicts_are_stored_with_their_session(daemon_factory) -> None:
    """`user_frustration` (a session judge) only, `results: failing` (the default is `all`): the rules' write
    keeps nothing; the judge's failing verdict on the support conversation stores that session with it."""
    from tests.support.fake_gemini import FakeGemini, FakeRequest, ok

    def frustrated_when_repeated(request: FakeRequest):
        repeated = "That's not what I asked" in request.prompt
        reply = {
            "verdict": "frustrated" if repeated else "not_frustrated",
            "explanation": "read the transcript",
            "signs": [{"turn": 2, "sign": "repeats_request", "quote": "not what I asked"}] if repeated else [],
        }
        return ok(reply, prompt_tokens=300, output_tokens=30)

    with FakeGemini(frustrated_when_repeated) as fake:
        judges = {"gemini_api_key": "test-key", "base_url": fake.url, "requests_per_minute": 0}
        config = {"evaluation": {"workers": 1}, "sessions": {"idle": "2s"}, "judges": judges,
                  "store": {"results": "failing"}}  # fmt: skip
        daemon = daemon_factory(config, evaluators=[{"name": "error_free"}, {"name": "user_frustration"}])
        send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(SUPPORT), str(INTERLEAVED))
        judged = lambda: daemon.value("agent_eval_results_total", evaluator="user_frustration") >= 3  # noqa: E731
        assert daemon.wait_for_condition(judged, timeout=60), daemon.output()
        store = daemon.workdir / "results.db"
        [(session_id, _, _, turn_count, failed, _, _)] = wait_rows(daemon, store, SESSIONS, 1)
        daemon.stop()  # everything queued is written at shutdown
    support = expected_sessions()[expected_sessions_support()]
    assert (session_id, turn_count, failed) == (support["session_id"], 3, 1)
    assert read_store(store, "SELECT COUNT(*) FROM sessions") == [(1,)]
    [(trace_id, level, passed, details)] = read_store(
        store, "SELECT trace_id, level, passed, details FROM results WHERE session_id = ?", (session_id,)
    )
    assert (trace_id, level, passed) == (support["trace_ids"][-1], "session", 0)
    assert json.loads(details)["turn"] == 2  # the verdict names the turn it is about
