"""`agent-monitor inspect` prints the sessions found in the files (through the CLI, in a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.support.otlp_json import otlp_document
from tests.support.spanfactory import make_span

pytestmark = pytest.mark.integration  # each test starts a process or a server

SUPPORT = str(CORPUS / "oi_openai__session_support")
INTERLEAVED = str(CORPUS / "otel_genai__session_interleaved")


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "from monitor.cli import main; main()", "inspect", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_text_shows_each_session_with_its_turns() -> None:
    out = _cli("--sessions", SUPPORT, INTERLEAVED)
    lines = out.splitlines()
    heads = [line for line in lines if line.startswith("session ")]
    assert [h.split()[1] for h in heads] == [
        "c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95",
        "conv_trip_7Hq2Lx9d",
        "conv_hr_3Fz8Rk1p",
    ]
    assert "source=session.id" in heads[0] and "turns=3" in heads[0] and "tokens=1138→184 (total 1322)" in heads[0]
    assert "cost=$0.000" in heads[0]
    assert "source=gen_ai.conversation.id" in heads[1] and "tokens=550→67" in heads[1]
    assert "  turn 1  trace deba9d79534f5572bafbacd3e237f0fa" in out
    assert "    user:   This isn't helping. Let me talk to a human agent, please." in lines
    assert "    tools:  request_human_agent" in lines
    assert "└─" not in out  # only the sessions


def test_default_output_has_the_trees_then_the_sessions() -> None:
    out = _cli(SUPPORT)
    assert out.index("trace deba9d79534f5572bafbacd3e237f0fa") < out.index("session c0a8f1d2")


def test_json_sessions() -> None:
    [session] = json.loads(_cli("--sessions", "--json", SUPPORT))
    assert session["session_id"] == "c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95"
    assert session["source"] == "session.id" and session["turn_count"] == 3
    assert (session["input_tokens"], session["output_tokens"], session["total_tokens"]) == (1138, 184, 1322)
    assert session["cost_usd"] > 0
    assert (
        [t["trace_id"] for t in session["turns"]]
        == session["trace_ids"]
        == [
            "deba9d79534f5572bafbacd3e237f0fa",
            "acd1caa5afc166897ad4b194ba5ac53b",
            "fb8ba622bf9d9c8c0faef482497a1c98",
        ]
    )
    last = session["turns"][2]
    assert last["user_message"] == "This isn't helping. Let me talk to a human agent, please."
    assert last["answer"].startswith("I've asked a human agent to take over (ticket HD-1042).")
    assert last["tool_calls"] == ["request_human_agent"] and last["errors"] == []
    assert (last["input_tokens"], last["output_tokens"]) == (716, 93)


def test_json_traces_name_their_session() -> None:
    views = json.loads(_cli("--json", INTERLEAVED))
    assert {v["trace_id"]: v["session"]["session_id"] for v in views}["fde37c741e68b8e0f80dcda1d98e3137"] == (
        "conv_hr_3Fz8Rk1p"
    )
    assert all(v["session"]["source"] == "gen_ai.conversation.id" for v in views)


def test_session_attribute_option(tmp_path: Path) -> None:
    """`--session-attribute NAME` (repeatable) names the session before the conventions do; errors are listed."""
    spans = []
    for n, (chat, text) in enumerate([("c-1", "hi"), ("c-2", "hello"), ("c-1", "again")]):
        trace_id = f"{n + 1:032x}"
        root = make_span(
            "agent",
            {"openinference.span.kind": "AGENT", "input.value": text, "output.value": "ok", "session.id": "s"},
            trace_id=trace_id,
            resource={"app.chat": chat},
        )
        tool = make_span(
            "lookup",
            {"openinference.span.kind": "TOOL", "tool.name": "lookup"},
            trace_id=trace_id,
            parent=root,
            status=2,
            status_message="timeout",
        )
        spans += [root, tool]
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(otlp_document(spans)), encoding="utf-8")
    assert [s["session_id"] for s in json.loads(_cli("--sessions", "--json", str(path)))] == ["s"]
    sessions = json.loads(
        _cli("--sessions", "--json", "--session-attribute", "app.x", "--session-attribute", "app.chat", str(path))
    )
    assert [(s["session_id"], s["source"], s["turn_count"]) for s in sessions] == [
        ("c-1", "app.chat", 2),
        ("c-2", "app.chat", 1),
    ]
    assert [t["user_message"] for t in sessions[0]["turns"]] == ["hi", "again"]
    assert sessions[0]["turns"][0]["errors"] == [{"kind": "tool", "name": "lookup", "message": "timeout"}]
    text = _cli("--sessions", "--session-attribute", "app.chat", str(path))
    assert "    error:  tool lookup: timeout" in text.splitlines()


def test_no_sessions() -> None:
    out = _cli("--sessions", str(CORPUS / "oi_openai__tool_agent"))
    assert out.strip() == "no sessions: none of the 1 traces names a session id"
