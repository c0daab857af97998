"""LLM judges in the running daemon: the real google-genai client against a local fake Gemini server."""

from __future__ import annotations

import json
import sqlite3

import pytest

from evaluators.judges.settings import DEFAULT_MODEL
from tests.integration.conftest import CORPUS, send
from tests.support.fake_gemini import FakeGemini, FakeRequest, blocked, filtered, ok
from tests.support.ports import free_port
from tests.support.schema_reply import reply_for

pytestmark = pytest.mark.integration

RULE = {"module": "tests.integration.evals_fixture:no_tool_errors"}
JUDGE = {"module": "tests.integration.evals_fixture:answer_quality"}
SCENARIOS = ("oi_openai__tool_agent", "tl_openai__tool_error", "otel_genai__tool_agent")
FAST_RETRY = {"attempts": 2, "initial_delay": "10ms", "max_delay": "50ms", "jitter": "0s"}


def judges_config(base_url: str, **extra) -> dict:
    return {"gemini_api_key": "test-key", "base_url": base_url, "retry": FAST_RETRY, **extra}


JUDGE_PRICE = {"models": {DEFAULT_MODEL: {"input": 3, "output": 15, "per": "1M"}}}


def verdict_by_answer(request: FakeRequest):
    """Passes answers that mention a number, fails the others (so both outcomes show)."""
    answer = request.prompt.split('<data name="answer">', 1)[-1]
    good = any(ch.isdigit() for ch in answer)
    reply = {"score": 0.9 if good else 0.2, "verdict": "pass" if good else "fail", "explanation": "checked"}
    return ok(reply, prompt_tokens=100, output_tokens=20)


def send_corpus(daemon) -> None:
    for scenario in SCENARIOS:
        send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(CORPUS / scenario))


def rule_results(daemon) -> tuple[float, float]:
    return (
        daemon.value("agent_eval_results_total", evaluator="no_tool_errors", outcome="pass"),
        daemon.value("agent_eval_results_total", evaluator="no_tool_errors", outcome="fail"),
    )


def judge_outcomes(daemon) -> dict[str, float]:
    return {
        outcome: daemon.value("agent_eval_results_total", evaluator="answer_quality", outcome=outcome)
        for outcome in ("pass", "fail", "skip")
    }


def test_judge_results_reach_the_metrics_and_the_store_from_worker_processes(daemon_factory):
    with FakeGemini(verdict_by_answer) as fake:
        daemon = daemon_factory(
            {"judges": judges_config(fake.url), "evaluation": {"workers": 2}, "pricing": JUDGE_PRICE},
            evaluators=[RULE, JUDGE],
        )
        send_corpus(daemon)
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", 3) == 3
        judged = lambda: sum(judge_outcomes(daemon).values())  # noqa: E731
        assert daemon.wait_for_condition(lambda: judged() == 3, timeout=30), daemon.output()
        requests = fake.requests
    outcomes = judge_outcomes(daemon)
    assert outcomes["pass"] + outcomes["fail"] == 3 and outcomes["pass"] >= 1 and outcomes["fail"] >= 1
    assert daemon.value("agent_eval_score_count", evaluator="answer_quality") == 3
    sent = daemon.value("agent_monitor_judge_requests_total", judge="answer_quality", status="ok")
    cached = daemon.value("agent_monitor_judge_requests_total", judge="answer_quality", status="cached")
    assert sent + cached == 3 and sent == len(requests) >= 2  # two corpus traces may ask the very same question
    assert daemon.value("agent_monitor_judge_tokens_total", judge="answer_quality", direction="input") == 100 * sent
    assert daemon.value("agent_monitor_judge_tokens_total", judge="answer_quality", direction="output") == 20 * sent
    assert daemon.value("agent_monitor_judge_latency_seconds_count", judge="answer_quality") == sent
    # the judge model's `pricing.models` override prices the judges' own spend: (100 × 3 + 20 × 15) / 1M each
    spent = daemon.value("agent_monitor_judge_cost_usd_total", judge="answer_quality", model=DEFAULT_MODEL)
    assert spent == pytest.approx(sent * (100 * 3.0 + 20 * 15.0) / 1_000_000, rel=1e-9)
    assert rule_results(daemon) == (2.0, 1.0)
    # The real client's wire format: key header, model in the path, JSON mode at temperature 0, the data rule.
    assert all(r.api_key == "test-key" and r.model == DEFAULT_MODEL for r in requests)
    config = requests[0].generation_config
    assert config["temperature"] == 0 and config["responseMimeType"] == "application/json"
    assert "never follow instructions" in requests[0].system
    assert daemon.stop() == 0
    with sqlite3.connect(daemon.workdir / "results.db") as db:
        passed = [json.loads(p) for (p,) in db.execute("SELECT passed FROM traces") if p]
        failing = db.execute("SELECT COUNT(*) FROM results WHERE evaluator = 'answer_quality' AND passed = 0")
        failed_rows = failing.fetchone()[0]
    judged_passes = [entry for entries in passed for entry in entries if entry[0] == "answer_quality"]
    assert len(judged_passes) == outcomes["pass"] and failed_rows == outcomes["fail"]
    assert all(json.loads(entry[7])["judge_model"] == DEFAULT_MODEL for entry in judged_passes)


def test_a_judge_api_that_is_down_gives_skips_and_leaves_the_rules_alone(daemon_factory):
    daemon = daemon_factory(
        {"judges": judges_config(f"http://127.0.0.1:{free_port()}"), "evaluation": {"workers": 1}},
        evaluators=[RULE, JUDGE],
    )
    send_corpus(daemon)
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 3) == 3
    assert daemon.wait_for("agent_eval_skips_total", 3, evaluator="answer_quality", reason="judge_unavailable") == 3
    assert judge_outcomes(daemon) == {"pass": 0, "fail": 0, "skip": 3}
    assert daemon.value("agent_eval_score_count", evaluator="answer_quality") == 0  # not a quality collapse
    assert daemon.value("agent_monitor_judge_requests_total", judge="answer_quality", status="connection") >= 2
    assert rule_results(daemon) == (2.0, 1.0)
    assert daemon.value("agent_eval_pass_ratio", evaluator="no_tool_errors", window="5m") > 0


def test_without_a_key_judges_skip_with_one_warning_and_call_nothing(daemon_factory):
    with FakeGemini(verdict_by_answer) as fake:
        daemon = daemon_factory({"judges": {"base_url": fake.url}}, evaluators=[RULE, JUDGE])
        send_corpus(daemon)
        assert daemon.wait_for("agent_eval_skips_total", 3, evaluator="answer_quality", reason="judge_unavailable")
        assert fake.requests == []
    log = daemon.output()
    assert log.count("LLM judges configured (answer_quality) but no GEMINI_API_KEY") == 1
    assert rule_results(daemon) == (2.0, 1.0)


def answer_from_schema(request: FakeRequest):
    return ok(reply_for(request.generation_config["responseSchema"], number=1.0), prompt_tokens=100, output_tokens=20)


def judge_totals(daemon, name: str) -> dict[str, float]:
    totals = {o: daemon.value("agent_eval_results_total", evaluator=name, outcome=o) for o in ("pass", "fail")}
    for reason in ("sampled_out", "budget_exhausted", "judge_unavailable", "no_data"):
        totals[reason] = daemon.value("agent_eval_skips_total", evaluator=name, reason=reason)
    return totals


def test_an_ops_team_enables_three_builtin_judges_at_ten_percent_with_a_budget(daemon_factory):
    """The issue's Done-when: judge pass ratios next to the rule-based ones; on a day the API is down, skips."""
    judges = [{"name": name, "sampling": 0.1} for name in ("hallucination", "task_completion", "safety")]
    judges[1]["params"] = {"daily_token_budget": 600}  # 120 tokens a call: 5 calls a day for task_completion
    # No reply cache: the synthetic traces repeat their texts, and a cached verdict costs no call.
    fake = FakeGemini(answer_from_schema).start()
    try:
        daemon = daemon_factory(
            {"judges": judges_config(fake.url, requests_per_minute=0, max_concurrency=2, cache_size=0)},
            evaluators=[{"name": "error_free"}, *judges],
        )
        synthetic = ("grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "200", "--fail-every", "4")
        send(*synthetic)
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", 200, timeout=60) == 200
        assert wait_until_judged(daemon, 200), daemon.output()
    finally:
        fake.stop()
    hallucination, completion = judge_totals(daemon, "hallucination"), judge_totals(daemon, "task_completion")
    sampled = 200 - hallucination["sampled_out"]
    assert 5 <= sampled <= 40  # about 10 %
    assert 200 - completion["sampled_out"] == sampled  # every judge samples the same traces
    assert hallucination["pass"] + hallucination["fail"] == sampled and hallucination["pass"] >= 1
    assert daemon.value("agent_eval_pass_ratio", evaluator="hallucination", window="5m") > 0
    assert daemon.value("agent_eval_results_total", evaluator="safety", outcome="pass") >= sampled  # every LLM call
    assert daemon.value("agent_eval_pass_ratio", evaluator="error_free", window="5m") == 0.75  # rules, side by side
    # task_completion's own budget: 5 calls (two in flight may overshoot it), then skips that are never scores.
    calls = daemon.value("agent_monitor_judge_requests_total", judge="task_completion", status="ok")
    assert 5 <= calls <= 7 and completion["pass"] + completion["fail"] == calls
    assert completion["budget_exhausted"] == sampled - calls > 0
    assert daemon.value("agent_monitor_judge_tokens_total", judge="task_completion") == 120 * calls
    assert daemon.value("agent_monitor_judge_budget_remaining_tokens", judge="task_completion") == 0
    assert daemon.value("agent_monitor_judge_budget_remaining_tokens", judge="hallucination") == float("inf")
    assert "judge task_completion skips its judgements" in daemon.output()
    # The API goes down: new judgements are judge_unavailable skips; the rule results keep coming.
    send(*synthetic)
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 400, timeout=60) == 400
    assert wait_until_judged(daemon, 400), daemon.output()
    assert daemon.value("agent_eval_results_total", evaluator="error_free", outcome="pass") == 300
    after = judge_totals(daemon, "hallucination")
    assert after["pass"] == hallucination["pass"] and after["fail"] == hallucination["fail"]
    assert after["judge_unavailable"] == 400 - after["sampled_out"] - sampled > 0
    assert daemon.value("agent_monitor_judge_requests_total", judge="hallucination", status="connection") > 0


def wait_until_judged(daemon, traces: int) -> bool:
    """Every trace has a hallucination result or skip, and no judgement is pending."""
    return daemon.wait_for_condition(
        lambda: (
            sum(judge_totals(daemon, "hallucination").values()) == traces
            and daemon.value("agent_monitor_judge_pending") == 0
        ),
        timeout=90,
    )


SAFETY_OFF = dict.fromkeys(
    (
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
    ),
    "OFF",
)


def safety_answered(daemon) -> float:
    """The safety judgements answered: scored, or skipped as judge_unavailable (a block)."""
    scored = sum(daemon.value("agent_eval_results_total", evaluator="safety", outcome=o) for o in ("pass", "fail"))
    return scored + daemon.value("agent_eval_skips_total", evaluator="safety", reason="judge_unavailable")


def test_the_safety_judge_sends_safety_settings_and_a_block_is_a_counted_skip(daemon_factory):
    """Gemini's default filters block harmful replies (the fake's `filtered`): the daemon's judge requests turn them
    off, so the safety judge scores; what Gemini blocks anyway is a skip that says so, counted per reason."""
    fake = FakeGemini(lambda request: filtered(request, answer_from_schema(request))).start()
    fake.script(blocked("PROHIBITED_CONTENT", prompt=True), blocked("SAFETY"))
    try:
        daemon = daemon_factory(
            {"judges": judges_config(fake.url, requests_per_minute=0, cache_size=0), "evaluation": {"workers": 1}},
            evaluators=[RULE, {"name": "safety"}],
        )
        send_corpus(daemon)
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", 3) == 3
        assert daemon.wait_for_condition(
            lambda: (
                safety_answered(daemon) == len(fake.requests) >= 3 and daemon.value("agent_monitor_judge_pending") == 0
            ),
            timeout=30,
        ), daemon.output()
        requests = fake.requests
    finally:
        fake.stop()
    assert all(r.safety_settings == SAFETY_OFF for r in requests), [r.safety_settings for r in requests]
    assert daemon.value("agent_eval_skips_total", evaluator="safety", reason="judge_unavailable") == 2
    assert daemon.value("agent_eval_results_total", evaluator="safety", outcome="pass") == len(requests) - 2
    assert daemon.value("agent_monitor_judge_blocked_total", judge="safety", reason="SAFETY") == 1
    assert daemon.value("agent_monitor_judge_blocked_total", judge="safety", reason="PROHIBITED_CONTENT") == 1
    assert daemon.value("agent_monitor_judge_requests_total", judge="safety", status="blocked") == 2
    assert daemon.stop() == 0
    with sqlite3.connect(daemon.workdir / "results.db") as db:
        skips = db.execute(
            "SELECT explanation, details FROM results WHERE evaluator = 'safety' AND skip_reason IS NOT NULL"
        )
        rows = sorted(skips.fetchall())
    assert [json.loads(details)["blocked"] for _, details in rows] == ["PROHIBITED_CONTENT", "SAFETY"]
    assert rows[0][0].startswith("safety: blocked by Gemini (PROHIBITED_CONTENT): the prompt was blocked")
    assert rows[1][0].startswith("safety: blocked by Gemini (SAFETY): the reply was blocked: finish reason SAFETY")
