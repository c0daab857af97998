"""The pairwise stage with the real judge engine, the real google-genai client and the real metrics exporter,
against the fake Gemini server (REST wire format): two calls per pair, one in each order; outcomes as the
model's answers dictate, in agent_eval_pairwise_total and the candidate's result metrics."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from evaluators.judges import DEFAULT_MODEL, JudgeSettings
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from monitor.engine.pairing import PairOffer
from monitor.engine.pairwise_stage import PairwiseStage
from monitor.metrics import MetricsExporter
from tests.monitor.engine.pairs import JUDGE, Recorder, block, offers, variants
from tests.support.fake_gemini import FakeGemini, FakeRequest, ok
from tests.support.metrics_scrape import value

pytestmark = pytest.mark.integration  # each test starts a process or a server

CONFIG = variants({"baseline": "1.4", "candidate": "1.5"})
BETTER, WORSE, SAME, BIASED = "Question 1?", "Question 2?", "Question 3?", "Question 4?"


def scripted(request: FakeRequest):
    """Question 1: the candidate's answer is better; 2: the baseline's; 3: SAME; 4: always A (position bias)."""
    question = block(request.prompt, "user_question")
    a = block(request.prompt, "answer_a")
    candidate_is_a = a.startswith("candidate")
    choice = {
        BETTER: "A" if candidate_is_a else "B",
        WORSE: "B" if candidate_is_a else "A",
        SAME: "SAME",
        BIASED: "A",
    }[question]
    return ok({"choice": choice, "explanation": f"{choice} for {question}"}, prompt_tokens=40, output_tokens=8)


def judge_all(url: str | None, traces: list[PairOffer], exporter: MetricsExporter, **settings) -> Recorder:
    recorder = Recorder()

    async def scenario() -> None:
        config = JudgeSettings(api_key="k" if url else None, base_url=url, requests_per_minute=0, **settings)
        engine = JudgeEngine(config, JudgeClient(config) if url else None, observer=exporter.judges)
        stage = PairwiseStage(
            CONFIG.pairwise, {"pairwise_quality": JUDGE}, engine.judge,
            lambda tally: (recorder.tallies.append(tally), exporter.results.apply_tally(tally)), recorder.writes.extend,
            exporter.pairwise.count,
        )  # fmt: skip
        try:
            stage.submit(traces)
            assert await stage.drain(10) == 0
        finally:
            await stage.shutdown(0)
            await engine.aclose()

    asyncio.run(scenario())
    return recorder


def pairwise_total(exporter: MetricsExporter, outcome: str) -> float | None:
    labels = {"evaluator": "pairwise_quality", "baseline": "1.4", "candidate": "1.5", "outcome": outcome}
    return value(exporter, "agent_eval_pairwise_total", **labels)


def test_two_calls_per_pair_one_in_each_order_and_the_outcomes_they_dictate() -> None:
    exporter = MetricsExporter(variants=CONFIG)
    assert [pairwise_total(exporter, o) for o in ("win", "tie", "loss")] == [0.0, 0.0, 0.0]  # from start-up
    questions = (BETTER, WORSE, SAME, BIASED)
    traces = offers(CONFIG, *[(v, q, f"{role} answer to {q}") for q in questions
                              for v, role in (("1.4", "baseline"), ("1.5", "candidate"))])  # fmt: skip
    with FakeGemini(scripted) as fake:
        recorder = judge_all(fake.url, traces, exporter)
        sent = fake.requests
    assert len(sent) == 8 and {r.method for r in sent} == {"generateContent"}
    for question in questions:
        mine = [r for r in sent if block(r.prompt, "user_question") == question]
        seen = sorted((block(r.prompt, "answer_a")[:4], block(r.prompt, "answer_b")[:4]) for r in mine)
        assert seen == [("base", "cand"), ("cand", "base")], question  # exactly one call in each order
    assert fake.errors == []
    assert [pairwise_total(exporter, o) for o in ("win", "tie", "loss")] == [1.0, 2.0, 1.0]
    assert exporter.pairwise.totals("1.4", "1.5") == [("pairwise_quality", {"win": 1, "tie": 2, "loss": 1})]
    assert exporter.pairwise.totals("1.5", "1.4") == []
    results = {o: value(exporter, "agent_eval_results_total", evaluator="pairwise_quality", level="trace",
                        service="geo-agent", agent="", variant="1.5", outcome=o) for o in ("pass", "fail")}  # fmt: skip
    assert results == {"pass": 3.0, "fail": 1.0}  # on the candidate's variant: win and ties pass, the loss fails
    assert value(exporter, "agent_monitor_judge_requests_total", judge="pairwise_quality",
                 model=DEFAULT_MODEL, status="ok") == 8  # fmt: skip
    lost = next(w for w in recorder.writes for r in w.results if r.passed is False)
    [row] = lost.results
    assert row.details is not None
    details = json.loads(row.details)
    assert re.fullmatch(r"[0-9a-f]{32}", details["partner_trace_id"]) and details["outcome"] == "loss"
    assert '"input_tokens":80' in row.details  # both orders' tokens


def test_without_a_key_pairs_are_judge_unavailable_and_nothing_is_sent() -> None:
    exporter = MetricsExporter(variants=CONFIG)
    traces = offers(CONFIG, ("1.4", BETTER, "baseline answer"), ("1.5", BETTER, "candidate answer"))
    with FakeGemini(scripted) as fake:
        recorder = judge_all(None, traces, exporter)
        assert fake.requests == []
    assert recorder.outcomes("1.5") == {"judge_unavailable": 1}
    assert [pairwise_total(exporter, o) for o in ("win", "tie", "loss")] == [0.0, 0.0, 0.0]
    assert value(exporter, "agent_eval_skips_total", evaluator="pairwise_quality", service="geo-agent",
                 reason="judge_unavailable") == 1  # fmt: skip


def test_a_spent_budget_skips_the_pair_as_budget_exhausted() -> None:
    exporter = MetricsExporter(variants=CONFIG)
    traces = offers(CONFIG, *[(v, q, f"{role} answer") for q in (BETTER, WORSE)
                              for v, role in (("1.4", "baseline"), ("1.5", "candidate"))])  # fmt: skip
    with FakeGemini(scripted) as fake:
        # 48 tokens a call: the first pair spends 96 of 90; the second finds the budget spent.
        recorder = judge_all(fake.url, traces, exporter, daily_token_budget=90, max_concurrency=1)
        assert len(fake.requests) == 2
    assert recorder.outcomes("1.5") == {"pass": 1, "budget_exhausted": 1}
