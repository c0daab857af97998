"""`agent-monitor evaluate` with LLM judges: the same judges section as the daemon, spend in the report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import genai_prices
import pytest

from evaluators.judges import DEFAULT_MODEL
from tests.conftest import CORPUS
from tests.monitor.commands.test_evaluate_cmd import by_name, evaluate
from tests.support.fake_gemini import FakeGemini, FakeRequest, ok

SCENARIOS = [CORPUS / "oi_openai__tool_agent", CORPUS / "tl_openai__tool_error"]


def spec(tmp_path: Path, base_url: str, key: str | None = "test-key") -> Path:
    key_line = f"gemini_api_key: {key}" if key else ""
    path = tmp_path / "spec.yaml"
    text = f"""
        evaluators:
          - module: tests.integration.evals_fixture:no_tool_errors
          - module: tests.integration.evals_fixture:answer_quality
            min_pass_rate: 0.5
        judges:
          {key_line}
          base_url: {base_url}
          retry: {{attempts: 2, initial_delay: 10ms, max_delay: 20ms, jitter: 0s}}
          requests_per_minute: 0
    """
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def answer(request: FakeRequest):
    return ok({"score": 0.8, "verdict": "pass", "explanation": "fine"}, prompt_tokens=50, output_tokens=7)


@pytest.mark.integration
def test_offline_run_judges_every_trace_and_reports_the_spend(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with FakeGemini(answer) as fake:
        code, report, err = evaluate(*SCENARIOS, spec=spec(tmp_path, fake.url))
        calls = len(fake.requests)
    assert code == 0, err
    judged = by_name(report)["answer_quality"]
    assert judged["kind"] == "llm_judge" and judged["scored"] == 2 and judged["pass_rate"] == 1.0
    assert calls == 2
    spend = report["judge_spend"]["answer_quality"]
    assert spend["requests"] == 2 and spend["input_tokens"] == 100 and spend["output_tokens"] == 14
    code, table, _ = evaluate(*SCENARIOS, spec=spec(tmp_path, fake.url), fmt="table")
    assert "judge spend:" in table and "answer_quality" in table


@pytest.mark.integration
def test_offline_judges_fall_back_to_the_environment_key_and_skip_without_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with FakeGemini(answer) as fake:
        code, report, _ = evaluate(*SCENARIOS, spec=spec(tmp_path, fake.url, key=None))
        assert fake.requests == []
        judged = by_name(report)["answer_quality"]
        assert judged["scored"] == 0 and judged["skip_counts"] == {"judge_unavailable": 2}
        assert code == 1  # the min_pass_rate gate fails: nothing was scored
        monkeypatch.setenv("GEMINI_API_KEY", "env-key")
        code, report, _ = evaluate(*SCENARIOS, spec=spec(tmp_path, fake.url, key=None))
        assert code == 0 and {r.api_key for r in fake.requests} == {"env-key"}


@pytest.mark.integration
def test_offline_judge_spend_is_priced_and_a_spec_pricing_override_wins(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    reply = ok(
        {"score": 0.8, "verdict": "pass", "explanation": "fine"},
        prompt_tokens=3_000,
        output_tokens=40,
        thoughts_tokens=60,
        cached_tokens=1_000,
        model_version=DEFAULT_MODEL,
    )
    extracted = genai_prices.extract_usage(json.loads(reply.body), provider_id="google")
    one = float(genai_prices.calc_price(extracted.usage, DEFAULT_MODEL, provider_id="google").total_price)
    with FakeGemini(lambda request: reply) as fake:
        path = spec(tmp_path, fake.url)
        code, report, err = evaluate(*SCENARIOS, spec=path)
        assert code == 0, err
        spend = report["judge_spend"]["answer_quality"]
        assert spend["cost_usd"] == pytest.approx(2 * one, rel=1e-9) and spend["unpriced"] == 0
        _, table, _ = evaluate(*SCENARIOS, spec=path, fmt="table")
        assert f"${2 * one:.6f}" in table
        pricing = f"pricing:\n  models:\n    {DEFAULT_MODEL}: {{input: 1, output: 4, cache_read: 0.25, per: 1K}}\n"
        path.write_text(path.read_text(encoding="utf-8") + pricing, encoding="utf-8")
        code, report, err = evaluate(*SCENARIOS, spec=path)
    assert code == 0, err
    overridden = (2_000 * 1 + 1_000 * 0.25 + 100 * 4) / 1_000
    assert report["judge_spend"]["answer_quality"]["cost_usd"] == pytest.approx(2 * overridden, rel=1e-12)


def test_an_invalid_spec_pricing_section_is_a_usage_error(tmp_path: Path) -> None:
    path = spec(tmp_path, "http://127.0.0.1:9")
    path.write_text(path.read_text(encoding="utf-8") + "pricing:\n  models:\n    m: {input: -1, output: 1}\n")
    code, _, err = evaluate(*SCENARIOS, spec=path)
    assert code == 2 and "pricing.models.m" in err


@pytest.mark.integration
def test_offline_session_judges_judge_each_conversation_once(tmp_path: Path, monkeypatch) -> None:
    """`evaluate` with a session judge: one request per conversation (not per trace), the transcript in turn
    order, a result naming the session and the turn its verdict is about."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    path = tmp_path / "spec.yaml"
    path.write_text(
        textwrap.dedent("""
            evaluators:
              - name: user_frustration
            judges:
              gemini_api_key: test-key
              base_url: {url}
              requests_per_minute: 0
        """),
        encoding="utf-8",
    )
    sign = {"turn": 2, "sign": "repeats_request", "quote": "not what I asked"}
    frustrated = {"verdict": "frustrated", "signs": [sign], "explanation": "the user had to repeat the question"}
    with FakeGemini(lambda request: ok(frustrated)) as fake:
        path.write_text(path.read_text(encoding="utf-8").replace("{url}", fake.url), encoding="utf-8")
        code, report, err = evaluate(CORPUS / "oi_openai__session_support", spec=path)
        prompts = [r.prompt for r in fake.requests]
    assert code == 0, err
    assert len(prompts) == 1  # three traces, one conversation: one judgement
    turns = ["umbrella in Paris tomorrow", "That's not what I asked", "talk to a human agent"]
    positions = [prompts[0].find(text) for text in turns]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), positions
    judged = by_name(report)["user_frustration"]
    assert judged["level"] == "session" and judged["scored"] == 1 and judged["pass_rate"] == 0.0
    assert report["sessions"] == 1
