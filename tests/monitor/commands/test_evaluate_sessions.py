"""`agent-monitor evaluate` and `compare` on conversations: traces grouped into sessions, the session-level
evaluators run once per session and reported like the others (through the real argument parser)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import build_parser
from monitor.commands import compare_cmd, evaluate_cmd
from tests.conftest import CORPUS

SUPPORT = CORPUS / "oi_openai__session_support"
INTERLEAVED = CORPUS / "otel_genai__session_interleaved"
TOOL_AGENT = CORPUS / "oi_openai__tool_agent"
SUPPORT_ID = "c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95"
SUPPORT_TRACES = [
    "deba9d79534f5572bafbacd3e237f0fa",
    "acd1caa5afc166897ad4b194ba5ac53b",
    "fb8ba622bf9d9c8c0faef482497a1c98",
]
SESSION_RULES = {
    "abandonment",
    "human_handoff_request",
    "session_token_budget",
    "session_turn_budget",
    "turn_errors",
    "user_rephrase",
    "user_sentiment",
}


def run(command: Any, argv: list[str]) -> tuple[int, str, str]:
    args = build_parser().parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = command.run(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def evaluate_json(*paths: Path, spec: Path | None = None) -> tuple[int, dict[str, Any]]:
    argv = ["evaluate", *map(str, paths), "--format", "json"] + (["--evaluators", str(spec)] if spec else [])
    code, out, err = run(evaluate_cmd, argv)
    assert err == ""
    return code, json.loads(out)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["evaluator"]: e for e in report["evaluators"]}


def test_evaluate_runs_the_session_rules_once_per_conversation() -> None:
    code, report = evaluate_json(SUPPORT, INTERLEAVED, TOOL_AGENT)
    assert code == 0 and report["traces"] == 8 and report["sessions"] == 3  # tool_agent has no session id
    evals = by_name(report)
    for name in SESSION_RULES:
        assert evals[name]["level"] == "session" and evals[name]["total"] == 3, name
    assert (evals["user_rephrase"]["failed"], evals["user_rephrase"]["passed"]) == (1, 2)
    assert (evals["human_handoff_request"]["failed"], evals["human_handoff_request"]["passed"]) == (1, 2)
    assert evals["turn_errors"]["pass_rate"] == 1.0
    assert evals["error_free"]["total"] == 8  # trace-level results are still per turn
    # user_sentiment passes all three: VADER reads the support conversation's "This isn't helping." as mild, not
    # negative (a miss of its lexicon; the user_frustration judge is the one for that)
    assert (evals["user_sentiment"]["failed"], evals["user_sentiment"]["passed"]) == (0, 3)
    failing = {r["evaluator"]: r for r in report["worst"] if r["level"] == "session" and r["passed"] is False}
    assert set(failing) == {"user_rephrase", "human_handoff_request"}
    for record in failing.values():
        assert record["details"]["session"] == {"id": SUPPORT_ID, "trace_ids": SUPPORT_TRACES}
        assert record["trace_id"] == SUPPORT_TRACES[-1]
    assert failing["user_rephrase"]["details"]["rephrases"][0]["trace_id"] == SUPPORT_TRACES[1]
    kinds = {(s["evaluator"], s["step_kind"]) for s in report["signatures"]}
    assert {("user_rephrase", "session"), ("human_handoff_request", "session")} <= kinds


def test_the_table_names_the_session_and_its_turns() -> None:
    code, out, _ = run(evaluate_cmd, ["evaluate", str(SUPPORT)])
    assert code == 0
    assert "3 traces in 1 session;" in out.splitlines()[0]
    [line] = [ln for ln in out.splitlines() if "FAIL  user_rephrase" in ln]
    assert f"session {SUPPORT_ID} (traces {', '.join(SUPPORT_TRACES)})" in line
    assert "turn 2" in line
    assert any(ln.startswith("user_rephrase ") and " session " in ln for ln in out.splitlines())


def test_a_session_gate_fails_the_run(tmp_path: Path) -> None:
    spec = tmp_path / "gates.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            evaluators:
              - name: user_rephrase
                min_pass_rate: 1.0
              - name: error_free
            """
        ),
        encoding="utf-8",
    )
    code, report = evaluate_json(SUPPORT, spec=spec)
    assert code == 1 and report["failed_gates"] == ["user_rephrase"] and report["sessions"] == 1
    code, report = evaluate_json(INTERLEAVED, spec=spec)
    assert code == 0 and report["sessions"] == 2


def test_without_session_evaluators_the_traces_are_not_grouped(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators: [{name: error_free}]\n", encoding="utf-8")
    _, report = evaluate_json(SUPPORT, spec=spec)
    assert "sessions" not in report


def test_compare_reports_the_session_rules_of_both_versions() -> None:
    code, out, _ = run(
        compare_cmd, ["compare", "--baseline", str(INTERLEAVED), "--candidate", str(SUPPORT), "--format", "json"]
    )
    assert code in (0, 1)
    evals = by_name(json.loads(out))
    assert evals["user_rephrase"]["baseline"] == {"passed": 2, "total": 2, "pass_rate": 1.0}
    assert evals["user_rephrase"]["candidate"] == {"passed": 0, "total": 1, "pass_rate": 0.0}


@pytest.mark.integration
def test_the_installed_command_line(tmp_path: Path) -> None:
    """The real entry point in a subprocess (PYTHONPATH inherited)."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from monitor.cli import main; sys.exit(main())", "evaluate", str(SUPPORT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "human_handoff_request  session" in done.stdout and f"session {SUPPORT_ID}" in done.stdout


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_traces_without_sessions_report_zero_sessions(fmt: str) -> None:
    code, out, _ = run(evaluate_cmd, ["evaluate", str(TOOL_AGENT), "--format", fmt])
    assert code == 0
    if fmt == "json":
        report = json.loads(out)
        assert report["sessions"] == 0 and by_name(report)["user_rephrase"]["total"] == 0
    else:
        assert "in 0 sessions" in out.splitlines()[0]


def test_session_rules_and_judges_share_one_grouping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With both session rules and session judges selected the traces are grouped into sessions once, and both
    see the same sessions (each trace's session id is looked up once)."""
    from evaluators.sessions import grouping

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    looked_up: list[str] = []
    real = grouping.session_of

    def counting(trace: Any, extra: Any = ()) -> Any:
        looked_up.append(trace.trace_id)
        return real(trace, extra)

    monkeypatch.setattr(grouping, "session_of", counting)
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators: [{name: user_rephrase}, {name: conversation_completion}]\n", encoding="utf-8")
    code, report = evaluate_json(SUPPORT, INTERLEAVED, spec=spec)
    assert code == 0 and report["sessions"] == 3 and report["traces"] == 7
    evals = by_name(report)
    assert evals["user_rephrase"]["total"] == 3
    assert evals["conversation_completion"]["total"] == 3  # skipped without a judge key, one per session
    assert evals["conversation_completion"]["skip_counts"] == {"judge_unavailable": 3}
    assert len(looked_up) == len(set(looked_up)) == 7
