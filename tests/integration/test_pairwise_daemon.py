"""The pairwise judge in the running daemon: two versions of an agent (resource service.version) send traces
through the real OTel SDK exporter; the real google-genai client asks the fake Gemini server about each pair in
both orders; the outcomes reach /metrics and the review API."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.conftest import send
from tests.support.fake_gemini import FakeGemini, FakeRequest, ok

pytestmark = pytest.mark.integration

FAST_RETRY = {"attempts": 2, "initial_delay": "10ms", "max_delay": "50ms", "jitter": "0s"}
PAIRWISE = {"evaluator": "pairwise_quality", "baseline": "1.4", "candidate": "1.5", "outcome": ""}


def block(prompt: str, name: str) -> str:
    return prompt.split(f'<data name="{name}">\n', 1)[1].split("\n</data>", 1)[0]


def scripted(request: FakeRequest):
    """Question 0: the candidate's answer is better; 1: the baseline's; 2: SAME; 3: always A (position bias)."""
    number = int(re.fullmatch(r"Question (\d+)\?", block(request.prompt, "user_question"))[1])  # type: ignore[index]
    candidate_is_a = block(request.prompt, "answer_a").startswith("candidate")
    choice = ["A" if candidate_is_a else "B", "B" if candidate_is_a else "A", "SAME", "A"][number]
    return ok({"choice": choice, "explanation": f"question {number}: {choice}"}, prompt_tokens=60, output_tokens=12)


def send_versions(daemon, *runs: tuple[str, int]) -> None:
    """Each (version, traces) sent by its own sender process, at the same time: answers to Question {i}?"""
    endpoint = f"127.0.0.1:{daemon.grpc_port}"
    with ThreadPoolExecutor(len(runs)) as pool:
        senders = []
        for (version, count), role in zip(runs, ("baseline", "candidate"), strict=True):
            args = ["grpc", endpoint, "synthetic", "--traces", str(count), "--version", version]
            args += ["--question", "Question {i}?", "--answer", f"{role} answer {{i}}"]
            senders.append(pool.submit(send, *args))
        for sender in senders:
            sender.result(timeout=150)  # a failed sender fails the test


def pairs(daemon) -> dict[str, float]:
    return {o: daemon.value("agent_eval_pairwise_total", **{**PAIRWISE, "outcome": o}) for o in ("win", "tie", "loss")}


def get_json(daemon, path: str):
    status, body, _ = daemon.get(path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def test_two_versions_answering_the_same_questions_are_judged_pair_by_pair(daemon_factory):
    with FakeGemini(scripted) as fake:
        daemon = daemon_factory(
            {
                "judges": {"gemini_api_key": "test-key", "base_url": fake.url, "retry": FAST_RETRY,
                           "requests_per_minute": 0, "cache_size": 0},
                "variants": {"attribute": "service.version",
                             "compare": [{"evaluator": "error_free", "baseline": "1.4", "candidate": "1.5"}],
                             "pairwise": [{"baseline": "1.4", "candidate": "1.5", "pair_by": "input", "window": "8s"}]},
                "evaluation": {"workers": 2},
            },
            evaluators=[{"name": "error_free"}],
        )  # fmt: skip
        assert pairs(daemon) == {"win": 0, "tie": 0, "loss": 0}  # every series from start-up
        send_versions(daemon, ("1.4", 5), ("1.5", 4))  # Question 4 has no candidate answer
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", 9) == 9
        assert daemon.wait_for_condition(lambda: sum(pairs(daemon).values()) == 4, timeout=30), daemon.output()
        no_pair = dict(evaluator="pairwise_quality", reason="no_pair")
        assert daemon.wait_for("agent_eval_skips_total", 1, timeout=30, **no_pair) == 1, daemon.output()
        requests = fake.requests
    assert len(requests) == 8  # exactly two calls per pair
    for number in range(4):
        mine = [r for r in requests if block(r.prompt, "user_question") == f"Question {number}?"]
        orders = sorted(block(r.prompt, "answer_a").split()[0] for r in mine)
        assert orders == ["baseline", "candidate"], number  # one call in each order
    assert pairs(daemon) == {"win": 1, "tie": 2, "loss": 1}
    # The pair results count on the candidate's variant; the unpaired baseline trace is a no_pair skip on its own.
    result = dict(evaluator="pairwise_quality", variant="1.5")
    assert daemon.value("agent_eval_results_total", outcome="pass", **result) == 3
    assert daemon.value("agent_eval_results_total", outcome="fail", **result) == 1
    assert daemon.value("agent_eval_results_total", evaluator="pairwise_quality", variant="1.4", outcome="skip") == 1
    assert daemon.value("agent_monitor_judge_requests_total", judge="pairwise_quality", status="ok") == 8

    def stored() -> bool:
        return len(get_json(daemon, "/api/v1/results?evaluator=pairwise_quality")["items"]) == 5

    assert daemon.wait_for_condition(stored), get_json(daemon, "/api/v1/results?evaluator=pairwise_quality")
    [lost] = get_json(daemon, "/api/v1/results?evaluator=pairwise_quality&outcome=fail")["items"]
    details = json.loads(lost["details"])
    assert (details["outcome"], details["partner_variant"], lost["score"]) == ("loss", "1.4", 0.0)
    assert (details["baseline_first"], details["candidate_first"]) == ("A", "B")
    assert lost["input_excerpt"] == "Question 1?" and lost["output_excerpt"] == "candidate answer 1"
    partner = get_json(daemon, f"/api/v1/traces/{details['partner_trace_id']}")["summary"]
    assert (partner["input"], partner["output"]) == ("Question 1?", "baseline answer 1")
    candidate = get_json(daemon, f"/api/v1/traces/{lost['trace_id']}")
    assert [r["outcome"] for r in candidate["results"] if r["evaluator"] == "pairwise_quality"] == ["fail"]
    [unpaired] = get_json(daemon, "/api/v1/results?evaluator=pairwise_quality&outcome=skip")["items"]
    assert unpaired["skip_reason"] == "no_pair" and unpaired["input_excerpt"] == "Question 4?"
    listed = {e["name"]: e for e in get_json(daemon, "/api/v1/evaluators")}  # the review's evaluator list
    assert (listed["pairwise_quality"]["kind"], listed["pairwise_quality"]["level"]) == ("pairwise_judge", "trace")
    assert [w["samples"] for w in listed["pairwise_quality"]["windows"]] == [4, 4]  # the judged pairs
    [canary] = get_json(daemon, "/api/v1/comparisons")  # the canary view of the same two versions
    assert canary["pairwise"] == [{"evaluator": "pairwise_quality", "win": 1, "tie": 2, "loss": 1}]
    assert daemon.stop() == 0


def test_without_a_key_pairs_are_skipped_as_judge_unavailable(daemon_factory):
    with FakeGemini(scripted) as fake:
        daemon = daemon_factory(
            {"judges": {"base_url": fake.url},
             "variants": {"attribute": "service.version", "pairwise": [{"baseline": "1.4", "candidate": "1.5"}]}},
            evaluators=[{"name": "error_free"}],
        )  # fmt: skip
        send_versions(daemon, ("1.4", 2), ("1.5", 2))
        unavailable = dict(evaluator="pairwise_quality", reason="judge_unavailable")
        assert daemon.wait_for("agent_eval_skips_total", 2, **unavailable) == 2, daemon.output()
        assert fake.requests == []
    assert pairs(daemon) == {"win": 0, "tie": 0, "loss": 0}
    assert daemon.output().count("LLM judges configured (pairwise_quality) but no GEMINI_API_KEY") == 1
