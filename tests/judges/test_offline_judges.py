"""`agent-monitor evaluate` with LLM judges: the same judges section as the daemon, spend in the report."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.conftest import CORPUS
from tests.judges.fake_gemini import FakeGemini, FakeRequest, ok
from tests.unit.test_evaluate_cmd import by_name, evaluate

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
