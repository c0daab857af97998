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
        # agent-level evaluators run once per agent trace: one per named agent, or one unnamed without agents
        dispatched = sorted(a["agent"] or "" for a in got["agent_traces"])
        assert dispatched == (want["agents"] or ([""] if got["llm_calls"] or got["tool_calls"] else []))
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


# Per-call facts the scenario READMEs state: (input, output) tokens of each call in start order, the tools
# each call asked for, and each tool span's arguments.
CALL_FACTS = {
    "adk1_native__weather_handoff": (
        [(227, 23), (338, 18), (401, 25), (467, 18)],
        [["transfer_to_agent"], ["get_weather"], ["suggest_outfit"], []],
        [{"city": "Tokyo"}, {"temperature_c": 24, "conditions": "sunny"}],
    ),
    "adk1_native__tool_agent": (
        [(92, 27), (195, 32)],
        [["search_handbook"], []],
        [{"query": "travel expenses submission deadline"}],
    ),
    "oi_openai_agents__weather_handoff": (
        [(47, 40), (121, 41), (197, 50), (280, 25)],
        [["transfer_to_weather_agent"], ["get_weather"], ["suggest_outfit"], []],
        [{"city": "Oslo"}, {"temperature_c": 3, "conditions": "snow showers"}],
    ),
    "oi_openai_agents__chatcmpl_weather_handoff": (
        [(52, 18), (118, 17), (171, 24), (236, 29)],
        [["transfer_to_weather_agent"], ["get_weather"], ["suggest_outfit"], []],
        [{"city": "Oslo"}, {"temperature_c": 3, "conditions": "snow showers"}],
    ),
    "oi_openai_agents__chatcmpl_stream_weather_handoff": (
        [(52, 18), (118, 17), (171, 24), (236, 29)],
        [["transfer_to_weather_agent"], ["get_weather"], ["suggest_outfit"], []],
        [{"city": "Oslo"}, {"temperature_c": 3, "conditions": "snow showers"}],
    ),
    "oi_langchain__tool_agent": (
        [(59, 61), (212, 39), (296, 31)],
        [["get_weather", "get_weather"], ["suggest_outfit"], []],
        ["Tokyo", "Paris", {"temperature_c": 24, "conditions": "sunny"}],
    ),
}


@pytest.mark.parametrize("name", sorted(CALL_FACTS))
def test_per_call_facts(name: str):
    tokens, asked, arguments = CALL_FACTS[name]
    (got,) = _inspect_json(CORPUS / name)
    calls = got["llm_calls"]
    assert [(c["metrics"]["input_tokens"], c["metrics"]["output_tokens"]) for c in calls] == tokens
    assert [[t["name"] for t in c["tool_calls"]] for c in calls] == asked
    assert [(t["arguments"], t["arguments_error"]) for t in got["tool_calls"]] == [(a, None) for a in arguments]
    assert all(c["model"] for c in calls)
    assert all(m["content"] != "<elided>" for c in calls for m in c["messages"])


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


@pytest.mark.integration
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


@pytest.mark.integration
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
