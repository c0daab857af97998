"""Every corpus scenario, through `agent-monitor inspect --json`, yields exactly the expected facts."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from monitor.commands import inspect_cmd
from tests.conftest import CORPUS, corpus_scenarios

SCENARIOS = corpus_scenarios()


def _inspect_json(path: Path) -> list[dict]:
    out = io.StringIO()
    assert inspect_cmd.run(Namespace(paths=[str(path)], json=True, width=80), out) == 0
    return json.loads(out.getvalue())


def test_corpus_is_present():
    assert len(SCENARIOS) >= 20, f"expected the recorded corpus at {CORPUS}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario_facts(scenario: Path):
    expected = json.loads((scenario / "expected.json").read_text())
    views = {v["trace_id"]: v for v in _inspect_json(scenario)}
    assert sorted(views) == sorted(t["trace_id"] for t in expected["traces"])
    for want in expected["traces"]:
        got = views[want["trace_id"]]
        assert got["span_count"] == want["span_count"]
        assert len(got["llm_calls"]) == want["llm_calls"]
        assert len(got["llm_calls"]) in want["llm_calls_acceptable"]
        assert [t["tool"] for t in got["tool_calls"]] == want["tool_calls"]
        assert [f"{h['from_agent']}->{h['to_agent']}" for h in got["handoffs"]] == want["handoffs"]
        assert sorted(got["agents"]) == want["agents"]
        assert got["metrics"]["input_tokens"] == want["input_tokens"]
        assert got["metrics"]["output_tokens"] == want["output_tokens"]
        assert got["metrics"]["has_errors"] is want["has_error"]
        assert [s["name"] for s in got["error_spans"]] == want["error_spans"]
        for key, fact in (("input", "input_contains"), ("output", "output_contains")):
            if want[fact] is None:
                assert got[key] is None, f"{key} should be absent, got {got[key]!r}"
            else:
                assert got[key] is not None and want[fact] in got[key], f"{key}: {got[key]!r}"
        if want.get("retrieval_documents") is not None:
            docs = [d for r in got["retrievals"] for d in r["documents"]]
            assert len(docs) == want["retrieval_documents"]


@pytest.mark.parametrize("encoding", ["pb", "json"])
def test_protobuf_and_json_files_give_the_same_views(encoding: str, tmp_path: Path):
    """Each encoding alone (the loader prefers .pb when both exist) gives the same facts."""
    scenario = CORPUS / "adk_native__tool_agent_events"
    for source in scenario.glob(f"*.{encoding}"):
        (tmp_path / source.name).write_bytes(source.read_bytes())
    views = _inspect_json(tmp_path)
    assert len(views) == 1
    assert views[0]["metrics"]["input_tokens"] == 431
    assert "weather in Paris" in views[0]["input"]


def test_inspect_console_script_prints_a_tree():
    scenario = CORPUS / "oi_adk__handoff"
    result = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "inspect", str(scenario)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "handoff: triage_agent → flight_agent" in result.stdout
    assert "tool get_flight_status" in result.stdout
    assert "tokens=1408→68" in result.stdout


def test_inspect_reports_bad_files_clearly(tmp_path: Path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5}]}]}]}')
    result = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "inspect", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "broken.json" in result.stderr and "traceId" in result.stderr
    assert "Traceback" not in result.stderr
