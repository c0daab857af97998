"""`agent-monitor review --trace ID` prints each verdict's review in force, read from the daemon's API and from the
store file alike: agree or disagree (a false alarm, a miss), by whom, the correction and the note."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.store.reviews import ResultKey, ReviewInput
from monitor.store.sqlite import ResultStore
from monitor.web.review_writer import ReviewWriter
from tests.support.reviews_app import TOKEN, TRACE, fill, reviews_port

pytestmark = pytest.mark.integration  # each test starts a process or a server


def review(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["review", *args])
    return code, capsys.readouterr().out


@pytest.fixture(autouse=True)
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MONITOR_API_TOKEN", raising=False)


def test_trace_view_prints_each_verdicts_review_in_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.db"
    store = ResultStore(path, results="all")
    fill(store)
    reviewing = ReviewWriter(store, clock=lambda: 1_700_000_000.0)
    note = "the refund\nis there"
    false_alarm = ReviewInput(ResultKey(TRACE, "faithful", "trace"), "disagree", "ann", 1.0, "ok", note)
    miss = ReviewInput(ResultKey(TRACE, "json_valid", "llm", "s2"), "disagree", "bob")
    confirmed = ReviewInput(ResultKey(TRACE, "polite", "trace"), "agree", "carol")
    for asked in (false_alarm, miss, confirmed):
        asyncio.run(reviewing.review(asked))
    expected = [
        "reviews: 3 of 3 verdicts reviewed",
        "  faithful (trace) fail: disagree (false alarm) by ann 2023-11-14T22:13:20Z  corrected score 1.00  "
        "corrected label ok",
        "    note: the refund is there",
        "  json_valid (llm s2) pass: disagree (miss) by bob 2023-11-14T22:13:20Z",
        "  polite (trace) pass: agree by carol 2023-11-14T22:13:20Z",
    ]
    try:
        code, out = review(capsys, "--store", str(path), "--trace", TRACE)
        assert code == 0
        lines = out.splitlines()
        start = lines.index(expected[0])
        assert sorted(lines[start + 1 :]) == sorted(expected[1:])
        with reviews_port(store) as port:
            code, served = review(capsys, "--url", port.base, "--token", TOKEN, "--trace", TRACE)
        assert code == 0 and served == out  # the API and the store file print the same
    finally:
        store.close()
