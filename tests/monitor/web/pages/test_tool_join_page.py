"""The trace page of an ADK trace whose tool content is only in log events (adk_native__events_multi_turn), evaluated
by the TraceEvaluator into a real SQLite store and served by the real app: the failing tool step shows the arguments
and the `... HTTP 503` result the LLM calls recorded, and the handoff step names its target."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from evaluators import load_traces
from evaluators.sdk import builtin
from evaluators.traces import Trace
from monitor.auth import SESSION_COOKIE, session_value
from monitor.engine.configured import ConfiguredEvaluator
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.web.pages.results import span_anchor
from tests.conftest import CORPUS
from tests.support.metrics_port import fetch, review_app, serve, store_evaluated

pytestmark = pytest.mark.integration  # each test starts a process or a server

TOKEN = "tool-join-review-token"
COOKIE = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}
HANDOFF_TRACE = "c0d738d2ccc0b831fab69b68c6dc7758"  # turn 2: the handoff and the first failed conversion


@pytest.fixture
def base(tmp_path: Path) -> Iterator[str]:
    traces = load_traces([CORPUS / "adk_native__events_multi_turn"])
    path = tmp_path / "results.db"
    store_evaluated(path, traces, [ConfiguredEvaluator(builtin("error_free"), "error_free")])
    reader = SQLiteReviewReader.open(path)
    try:
        with serve(review_app(reader, TOKEN)) as url:
            yield url
    finally:
        reader.close()


def _row(body: str, span_id: str) -> str:
    match = re.search(rf'<tr id="{span_anchor(span_id)}".*?</tr>', body, re.S)
    assert match is not None, span_id
    return unescape(re.sub(r"<[^>]+>", " ", match[0]))


def _turn_two() -> Trace:
    return next(t for t in load_traces([CORPUS / "adk_native__events_multi_turn"]) if t.trace_id == HANDOFF_TRACE)


def test_the_failing_tool_step_shows_its_arguments_and_the_503_result(base: str) -> None:
    (tool,) = _turn_two().get_tool_calls()
    answer = fetch(base, f"/review/traces/{HANDOFF_TRACE}", COOKIE)
    assert answer.status == 200
    row = _row(answer.body, tool.span_id)
    assert "convert_currency" in row and "503" in row
    assert '"from_currency": "USD"' in row or '"from_currency":"USD"' in row
    assert "FX rate service unavailable" in row


def test_the_handoff_step_names_its_target(base: str) -> None:
    (handoff,) = _turn_two().handoffs
    answer = fetch(base, f"/review/traces/{HANDOFF_TRACE}", COOKIE)
    assert answer.status == 200
    assert "concierge_agent → currency_agent" in _row(answer.body, handoff.span_id)
