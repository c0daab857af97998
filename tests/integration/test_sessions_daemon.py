"""Conversations end to end: a real daemon fed multi-turn conversations through the real OTel SDK exporter (the
recorded OpenInference support conversation, 3 turns ending in a human handoff, and two interleaved OTel GenAI
conversations of 2 turns each) completes each session after `sessions.idle` with no new turn, runs a scripted
session evaluator (loaded by module path, a `Session` type hint) once per session, and exports its verdicts as
`agent_eval_results_total{level="session"}` with the last turn's trace id as exemplar; a turn of a completed
conversation is counted late and not evaluated again. Run with the evaluation in the daemon's own thread and in
worker processes (the turns cross in the batches' tallies)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integration.conftest import send

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
SUPPORT = CORPUS / "oi_openai__session_support"
INTERLEAVED = CORPUS / "otel_genai__session_interleaved"
EVALUATORS = [{"name": "error_free"}, {"module": "tests.support.session_evals:no_handoff"}]
RESULTS = "agent_eval_results_total"


def session_results(daemon, outcome: str) -> float:
    return daemon.value(RESULTS, evaluator="no_handoff", level="session", outcome=outcome)


@pytest.mark.parametrize("workers", [1, 2])
def test_conversations_complete_after_idle_and_are_evaluated_once(daemon_factory, workers: int) -> None:
    config = {"evaluation": {"workers": workers}, "sessions": {"idle": "2s"}}
    daemon = daemon_factory(config, evaluators=EVALUATORS)
    endpoint = f"127.0.0.1:{daemon.grpc_port}"
    send("grpc", endpoint, "corpus", str(SUPPORT), str(INTERLEAVED))
    completed = lambda: daemon.value("agent_sessions_completed_total") >= 3  # noqa: E731
    assert daemon.wait_for_condition(completed, timeout=60), daemon.output()
    assert daemon.wait_for_condition(lambda: session_results(daemon, "fail") >= 1, timeout=10), daemon.output()

    assert daemon.value("agent_sessions_completed_total", ended="idle") == 3
    assert daemon.value("agent_session_turns_count") == 3 and daemon.value("agent_session_turns_sum") == 7
    assert daemon.value("agent_monitor_sessions_open") == 0
    assert (session_results(daemon, "fail"), session_results(daemon, "pass")) == (1, 2)  # the handoff, the others
    assert daemon.value(RESULTS, level="trace", evaluator="error_free") == 7  # trace results per turn, unchanged
    [labels] = [lab for lab, v in daemon.metrics()[RESULTS] if lab["level"] == "session" and v > 0 and
                lab["outcome"] == "fail"]  # fmt: skip
    assert labels["agent"] == "" and labels["service"] not in ("", "unknown")

    # The failing session's exemplar is its last turn's trace.
    last_turn = json.loads((SUPPORT / "expected.json").read_text())["sessions"][0]["trace_ids"][-1]
    _, body, _ = daemon.get("/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"})
    line = next(x for x in body.decode().splitlines() if x.startswith(RESULTS) and 'level="session"' in x and
                'outcome="fail"' in x)  # fmt: skip
    assert re.search(r'# \{trace_id="([0-9a-f]{32})"\}', line)[1] == last_turn, line  # type: ignore[index]

    # The support conversation again, as new traces: late turns, counted, the session not evaluated again.
    send("grpc", endpoint, "variant", str(SUPPORT), "--copies", "1", "--version", "again")
    late = lambda: daemon.value("agent_monitor_session_turns_late_total") >= 3  # noqa: E731
    assert daemon.wait_for_condition(late, timeout=60), daemon.output()
    assert daemon.value("agent_monitor_sessions_open") == 0
    assert (session_results(daemon, "fail"), session_results(daemon, "pass")) == (1, 2)
    assert daemon.value("agent_sessions_completed_total") == 3


def test_session_judges_judge_each_completed_conversation_once_through_the_judge_engine(daemon_factory) -> None:
    """`user_frustration` (a session judge) in the daemon: one request per completed conversation to the fake
    Gemini server, its transcript in turn order, the verdict at level "session" in the metrics, the judges' spend
    counted like the trace judges'."""
    from tests.support.fake_gemini import FakeGemini, FakeRequest, ok

    def frustrated_when_repeated(request: FakeRequest):
        repeated = "That's not what I asked" in request.prompt
        reply = {
            "verdict": "frustrated" if repeated else "not_frustrated",
            "explanation": "read the transcript",
            "signs": [{"turn": 2, "sign": "repeats_request", "quote": "not what I asked"}] if repeated else [],
        }
        return ok(reply, prompt_tokens=300, output_tokens=30)  # fmt: skip

    with FakeGemini(frustrated_when_repeated) as fake:
        judges = {"gemini_api_key": "test-key", "base_url": fake.url, "requests_per_minute": 0}
        config = {"evaluation": {"workers": 1}, "sessions": {"idle": "2s"}, "judges": judges}
        daemon = daemon_factory(config, evaluators=[{"name": "error_free"}, {"name": "user_frustration"}])
        send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(SUPPORT), str(INTERLEAVED))
        judged = lambda: daemon.value(RESULTS, evaluator="user_frustration", level="session") >= 3  # noqa: E731
        assert daemon.wait_for_condition(judged, timeout=60), daemon.output()
        prompts = [r.prompt for r in fake.requests]
    assert len(prompts) == 3  # three conversations, seven traces: one judgement each
    support = next(p for p in prompts if "umbrella" in p)
    order = [support.find(t) for t in ("umbrella in Paris", "That's not what I asked", "talk to a human agent")]
    assert min(order) >= 0 and order == sorted(order)
    outcome = lambda o: daemon.value(RESULTS, evaluator="user_frustration", level="session", outcome=o)  # noqa: E731
    assert (outcome("fail"), outcome("pass")) == (1, 2)
    assert daemon.value("agent_monitor_judge_requests_total", judge="user_frustration") == 3
