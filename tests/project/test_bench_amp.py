"""The amp-evaluation bench (tests/bench/bench_amp.py) without amp-evaluation: its converter writes the bench's
traces in the shape amp's TraceLoader and parser read (tests/bench/amp_traces.py), its spec names our evaluators
as they are, and without a source it skips with one line and exit status 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.offline.spec import parse_spec
from tests.bench import bench_amp
from tests.bench.amp_traces import write_amp_files
from tests.bench.trace_files import write_trace_files

SPAN_FIELDS = {"traceId", "spanId", "name", "service", "startTime", "endTime", "durationInNanos", "kind", "status"}
TRACE_FIELDS = {"traceId", "rootSpanId", "rootSpanName", "startTime", "endTime", "spans", "durationInNanos"}


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The amp export of one file of 2 bench traces (protobuf)."""
    folder = tmp_path_factory.mktemp("amp")
    (written,) = write_amp_files(write_trace_files(folder / "otlp", 2, per_file=2), folder / "amp")
    return json.loads(written.read_text(encoding="utf-8"))


def test_each_trace_has_the_fields_and_spans_amp_reads(export: dict) -> None:
    assert export["totalCount"] == len(export["traces"]) == 2
    trace = export["traces"][0]
    assert set(trace) >= TRACE_FIELDS
    assert trace["spanCount"] == len(trace["spans"]) == 7
    kinds = sorted(s["ampAttributes"]["kind"] for s in trace["spans"])
    assert kinds == ["agent", "llm", "llm", "llm", "retriever", "tool", "tool"]
    assert all(set(span) >= SPAN_FIELDS for span in trace["spans"])
    assert [s["spanId"] for s in trace["spans"] if "parentSpanId" not in s] == [trace["rootSpanId"]]
    assert trace["startTime"].endswith("Z") and trace["durationInNanos"] > 0
    assert trace["input"].startswith("I fly to") and trace["output"].startswith("Expect")


def test_the_llm_and_tool_spans_carry_their_data(export: dict) -> None:
    spans = export["traces"][0]["spans"]
    llms = [s["ampAttributes"] for s in spans if s["ampAttributes"]["kind"] == "llm"]
    usage = [llm["data"]["tokenUsage"] for llm in llms]
    assert export["traces"][0]["tokenUsage"]["totalTokens"] == sum(u["totalTokens"] for u in usage) > 0
    assert {m["role"] for m in llms[-1]["input"]} == {"system", "user", "assistant", "tool"}
    assert [c["name"] for llm in llms for m in llm["output"] for c in m.get("toolCalls", [])] == bench_amp.TOOLS
    assert llms[-1]["output"][0]["content"].startswith("Expect")
    tools = [s["ampAttributes"] for s in spans if s["ampAttributes"]["kind"] == "tool"]
    assert [t["data"]["name"] for t in tools] == bench_amp.TOOLS
    assert all(json.loads(t["input"]) and json.loads(t["output"]) for t in tools)
    assert not any(s["ampAttributes"]["status"]["error"] for s in spans)


def test_the_matched_spec_names_our_evaluators_with_their_params() -> None:
    selection = parse_spec(json.loads(bench_amp.matched_spec()), "matched.yaml")
    assert [s.label for s in selection] == [ours for ours, _, _, _ in bench_amp.PAIRS]
    assert len(bench_amp.amp_evaluators(True)) == len(bench_amp.PAIRS) + len(bench_amp.AMP_ONLY)


def test_without_a_source_it_skips_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AMP_EVALUATION_SRC", raising=False)
    monkeypatch.setattr(bench_amp, "MIRROR", tmp_path / "none")
    assert bench_amp.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "skipped" in out[0] and "AMP_EVALUATION_SRC" in out[0] and bench_amp.CLONE in out[0]


def test_a_source_that_is_not_amp_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    monkeypatch.setenv("AMP_EVALUATION_SRC", str(tmp_path))
    assert bench_amp.main([]) == 2
