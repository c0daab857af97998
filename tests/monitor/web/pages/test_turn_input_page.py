"""The review page and the review API show each turn of a recorded multi-turn conversation with its own question
as the trace's input, and the rule that chose it: the corpus traces evaluated as the daemon does into a real SQLite
store, read back by the real reader and served by the metrics port's real app."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from evaluators.traces import Trace
from monitor.auth import SESSION_COOKIE, session_value
from monitor.commands.review_render import trace_view
from monitor.review.sqlite_reader import SQLiteReviewReader
from tests.corpus.multi_turn import MULTI_TURN_SCENARIOS, PROBE, assert_own_question, store_turns, turn_facts
from tests.support.metrics_port import fetch, review_app, serve

TOKEN = "turn-input-token"
COOKIE = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}
BEARER = {"Authorization": f"Bearer {TOKEN}"}
INPUT = re.compile(r"<h3>input</h3>(.*?)<pre>(.*?)</pre>", re.S)
SOURCE = re.compile(r'<p class="input-source">chosen by: <span>(.*?)</span></p>', re.S)


@pytest.fixture(params=MULTI_TURN_SCENARIOS)
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, dict[str, Trace]]]:
    scenario = request.param
    path = tmp_path / "results.db"
    traces = store_turns(scenario, path)
    reader = SQLiteReviewReader.open(path)
    try:
        with serve(review_app(reader, TOKEN)) as base:
            yield scenario, base, traces
    finally:
        reader.close()


@pytest.mark.integration
def test_the_trace_page_shows_the_turns_question_and_the_rule(site: tuple[str, str, dict[str, Trace]]) -> None:
    scenario, base, traces = site
    for fact in turn_facts(scenario):
        answer = fetch(base, f"/review/traces/{fact.trace_id}", COOKIE)
        assert answer.status == 200, answer.body[:300]
        match = INPUT.search(answer.body)
        assert match, "no input section"
        assert_own_question(unescape(match[2]), fact)
        source = SOURCE.search(match[1])
        assert source and unescape(source[1]) == traces[fact.trace_id].input_source


@pytest.mark.integration
def test_the_api_gives_the_turns_question_and_the_rule(site: tuple[str, str, dict[str, Trace]]) -> None:
    scenario, base, traces = site
    for fact in turn_facts(scenario):
        answer = fetch(base, f"/api/v1/traces/{fact.trace_id}", BEARER)
        assert answer.status == 200, answer.body[:300]
        summary = json.loads(answer.body)["summary"]
        assert_own_question(summary["input"], fact)
        assert summary["input_source"] == traces[fact.trace_id].input_source
    answer = fetch(base, f"/api/v1/results?evaluator={PROBE}&limit=50", BEARER)
    assert answer.status == 200, answer.body[:300]
    excerpts = {item["trace_id"]: item["input_excerpt"] for item in json.loads(answer.body)["items"]}
    for fact in turn_facts(scenario):
        assert_own_question(excerpts[fact.trace_id], fact)


def test_review_trace_in_the_terminal_says_which_rule_chose_the_input(tmp_path: Path) -> None:
    """`agent-monitor review --trace`'s view of each stored turn of the OpenAI Agents SDK conversation."""
    scenario = "oi_openai_agents__multi_turn"
    traces = store_turns(scenario, tmp_path / "results.db")
    reader = SQLiteReviewReader.open(tmp_path / "results.db")
    try:
        for fact in turn_facts(scenario):
            detail = reader.trace(fact.trace_id)
            assert detail is not None
            lines = trace_view(detail, width=200).splitlines()
            assert lines[1] == f"  input:  {fact.question}"
            assert lines[2] == f"  input from: {traces[fact.trace_id].input_source}"
    finally:
        reader.close()
