"""The review page's figures and texts (issue 23, item 12): explanations clipped at a boundary with the full text
on the trace page, the verdicts' step by name, the header's window ratios of the filtered variant, and token
usage that was never recorded shown as unknown (through a real store: trace_detail → packing → reader)."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from monitor.review.models import EvaluatorStatus, EvaluatorWindow, Step
from monitor.review.of_store import reader_of
from monitor.store.sqlite import ResultStore
from monitor.store.trace_detail import detail_row_of as build_detail
from tests.support.fake_reader import FakeReader, item, trace_detail
from tests.support.metrics_port import fetch, review_app, serve
from tests.support.spanfactory import make_span, trace_of
from tests.support.store_builders import outcome, row

pytestmark = pytest.mark.integration  # each test starts a process or a server

TRACE = "ef" * 16


def cell_text(body: str, cls: str = "text") -> list[str]:
    return [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(rf'<td [^>]*class="{cls}"[^>]*>(.*?)</td>', body)]


def test_a_long_explanation_is_cut_at_a_boundary_with_the_whole_on_the_trace_page() -> None:
    reason = " ".join(f"step{n:03d} failed," for n in range(40))
    explanation = json.dumps({"verdict": "fail", "reason": reason, "score": 0.1})
    result = item(1, trace_id=TRACE, explanation=explanation)
    reader = FakeReader(items=[result])
    reader.traces[TRACE] = trace_detail(TRACE, [result])
    with serve(review_app(reader, None)) as base:
        page = fetch(base, "/review/results")
        trace = fetch(base, f"/review/traces/{TRACE}")
    [shown] = [c for c in cell_text(page.body) if c.startswith('{"verdict"')]
    clipped = shown.removesuffix(" full text")
    assert clipped.endswith("…") and len(clipped) <= 240
    kept = clipped.removesuffix("…")
    assert explanation.startswith(kept)
    assert explanation[len(kept)] in " ," or kept.endswith(","), kept[-20:]  # not inside a word or number
    assert f'href="/review/traces/{TRACE}#verdicts"' in page.body and "full text" in page.body
    assert 'id="verdicts"' in trace.body and json.dumps(explanation)[1:-1].replace('\\"', "&quot;") in trace.body
    short = item(2, explanation="short and whole")
    with serve(review_app(FakeReader(items=[short]), None)) as base:
        assert "full text" not in fetch(base, "/review/results").body


def test_the_verdicts_step_column_names_the_step() -> None:
    tool_span = "03" * 8
    result = item(1, trace_id=TRACE, level="tool", span_id=tool_span)
    unknown = item(2, trace_id=TRACE, evaluator="latency", level="llm", span_id="0f" * 8)  # not a stored step
    reader = FakeReader(items=[result, unknown])
    detail = trace_detail(TRACE, [result, unknown])
    assert any(step.span_id == tool_span for step in detail.steps)
    named = {step.span_id: step for step in detail.steps}[tool_span]
    reader.traces[TRACE] = detail
    with serve(review_app(reader, None)) as base:
        body = fetch(base, f"/review/traces/{TRACE}").body
    steps = cell_text(body, "id")
    assert f"{named.kind} {named.name}" in steps
    assert tool_span not in steps and "0f" * 8 not in steps
    assert "span 0f0f0f0f…" in steps  # a step cut from the stored list: its short id, labelled
    assert f'href="#span-{tool_span}"' in body


def test_with_a_variant_filter_the_header_shows_that_variants_window_ratios() -> None:
    info = EvaluatorStatus(
        name="error_free",
        kind="rule",
        level="trace",
        windows=[EvaluatorWindow(window="5m", samples=10, pass_ratio=0.5)],
        variant_windows={
            "v2": [EvaluatorWindow(window="5m", samples=4, pass_ratio=0.25)],
            "v1": [EvaluatorWindow(window="5m", samples=6, pass_ratio=4 / 6)],
        },
    )
    reader = FakeReader(items=[item(1, variant="v2"), item(2, variant="v1")])
    with serve(review_app(reader, None, lambda: [info])) as base:
        every = fetch(base, "/review/results?evaluator=error_free").body
        v2 = fetch(base, "/review/results?evaluator=error_free&variant=v2").body
        v3 = fetch(base, "/review/results?evaluator=error_free&variant=v3").body

    def header(body: str) -> str:
        return unescape(re.sub(r"<[^>]+>", "", re.search(r'<p class="evaluator">(.*?)</p>', body, re.S)[1]))  # type: ignore[index]

    assert "5m: 50.0% of 10" in header(every)
    assert "variant v2: · 5m: 25.0% of 4" in header(v2) and "50.0%" not in header(v2)
    assert "no result of variant v3" in header(v3) and "50.0%" not in header(v3)


def failed_call_trace() -> object:
    agent = make_span("invoke_agent planner", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "p"})
    failed = make_span(
        "chat gpt-4o",
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "error.type": "RateLimitError"},
        parent=agent,
        status=2,
    )
    return trace_of(agent, failed)


def test_a_failed_llm_call_without_usage_shows_unknown_tokens_not_zero(tmp_path: Path) -> None:
    detail = build_detail(failed_call_trace())  # type: ignore[arg-type]
    assert detail.models == (("gpt-4o", 1, None, None, None, 0),)  # no usage: neither priced nor unpriced
    store = ResultStore(tmp_path / "r.db")
    try:
        trace_id = failed_call_trace().trace_id  # type: ignore[attr-defined]
        store.write([outcome(trace_id, row("error_free", False), detail=detail)])
        stored = reader_of(store).trace(trace_id)
        assert stored is not None
        [usage] = stored.summary.models
        assert (usage.model, usage.calls, usage.input_tokens, usage.output_tokens) == ("gpt-4o", 1, None, None)
        llm = [s for s in stored.steps if s.kind == "llm"]
        assert llm and all(isinstance(s, Step) and s.input_tokens is None for s in llm)
        with serve(review_app(reader_of(store), None)) as base:
            body = fetch(base, f"/review/traces/{trace_id}").body
    finally:
        store.close()
    models = re.search(r'<table class="compact models">(.*?)</table>', body, re.S)
    assert models is not None
    assert cell_text(models[1], "num") == ["1", "unknown", "unknown", "–"]  # spend: none (no usage), not $0
    assert "usage unknown" in body
