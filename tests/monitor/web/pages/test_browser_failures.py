"""The Failures page in a real headless Chromium over a real store (rows from SQL fixtures): signatures sorted by
impact with their trend drawn, one click to a signature's traces (one row per trace with every failing verdict),
and the canary page's new failure modes in the candidate; old results links land on /review/results."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from monitor.review.models import VariantComparison, VariantSide
from monitor.web.app import build_api_app
from tests.monitor.web.pages.test_browser import browser  # noqa: F401  (the fixture)
from tests.support.backends import sqlite_backend
from tests.support.metrics_port import fetch, serve
from tests.support.signature_rows import Sig, failing_traces, insert_signature, set_up

pytestmark = pytest.mark.integration  # each test starts a process or a server

BUSY, GROWING, QUIET = "1a" * 8, "2b" * 8, "3c" * 8


def comparison() -> VariantComparison:
    side = VariantSide(variant="1.4", passed=9, total=10, pass_ratio=0.9)
    candidate = VariantSide(variant="1.5", passed=5, total=10, pass_ratio=0.5)
    return VariantComparison(
        evaluator="tool_success_rate",
        baseline=side,
        candidate=candidate,
        window=3600.0,
        min_samples=5,
        alpha=0.05,
        delta=-0.4,
        delta_lower=-0.6,
        delta_upper=-0.2,
        p_value_pass_rate=0.01,
        p_value_scores=None,
        verdict=-1,
        reason="worse",
    )


def seeded_store(tmp_path: Path) -> str:
    backend = sqlite_backend(tmp_path)
    now = time.time()
    set_up(backend)
    insert_signature(backend, Sig(BUSY, first_seen=now - 1800, last_seen=now - 30, count=4, versions=["1.5"]))
    insert_signature(
        backend,
        Sig(
            GROWING, evaluator="error_free", step_name="search", first_seen=now - 3 * 86400, last_seen=now - 60, count=3
        ),
    )
    insert_signature(
        backend,
        Sig(
            QUIET,
            evaluator="refusal",
            step_kind="agent",
            step_name="planner",
            error_type="refused",
            template="refused: <str>",
            first_seen=now - 5 * 86400,
            last_seen=now - 7200,
            count=1,
        ),
    )
    failing_traces(backend, Sig(BUSY), [now - 1800, now - 900, now - 300, now - 30], variant="1.5", start=1)
    failing_traces(
        backend, Sig(GROWING, evaluator="error_free"), [now - 5 * 3600, now - 60], variant="1.4", start=10, also=()
    )
    failing_traces(backend, Sig(QUIET, evaluator="refusal"), [now - 7200], variant="1.4", start=20, also=())
    return backend.location


def test_failures(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    reader = sqlite_backend(tmp_path).reader() if seeded_store(tmp_path) else None
    app = build_api_app(
        lambda accept: (b"", "text/plain"),
        dict,
        None,
        reader=reader,
        evaluators_info=["tool_success_rate", "error_free", "refusal"],
        comparisons_info=lambda: [comparison()],
    )
    with serve(app) as base:
        page = browser.new_page()
        response = page.goto(f"{base}/review?since=24h")
        assert response is not None and response.status == 200
        rows = page.locator("table.signatures tbody tr")
        assert [rows.nth(i).get_attribute("data-signature") for i in range(rows.count())] == [BUSY, GROWING, QUIET]
        busy = rows.nth(0)
        assert "new" in busy.locator(".badge").inner_text() and "convert_currency" in busy.inner_text()
        bars = busy.locator(".spark i")
        assert bars.count() == 24  # one an hour over 24h
        heights = [bars.nth(i).bounding_box()["height"] for i in range(bars.count())]  # type: ignore[index]
        assert heights[-1] > 0 and sum(1 for h in heights if h > 0) == 1  # drawn: all four in the last hour
        assert "1.5" in busy.locator("td.where").inner_text()
        page.screenshot(path=str(tmp_path / "failures.png"), full_page=True)

        with page.expect_navigation():
            busy.locator("a.signature").click()
        assert f"/review/signatures/{BUSY}" in page.url
        traces = page.locator("table.signature-traces tbody tr")
        assert traces.count() == 4
        first = traces.nth(0)
        assert "tool_success_rate" in first.inner_text() and "error_free" in first.inner_text()
        with page.expect_navigation():
            first.locator("td.id a").click()
        assert "/review/traces/" in page.url

        page.goto(f"{base}/review?evaluator=error_free&service=checkout&since=1h")  # an alert's link
        rows = page.locator("table.signatures tbody tr")
        assert [rows.nth(i).get_attribute("data-signature") for i in range(rows.count())] == [GROWING]

        page.goto(f"{base}/review/canary")
        new = page.locator("table.new-modes tbody tr")
        assert page.locator("h2", has_text="New failure modes in 1.5").count() == 1
        assert [new.nth(i).get_attribute("data-signature") for i in range(new.count())] == [BUSY]
        page.screenshot(path=str(tmp_path / "canary.png"), full_page=True)
        page.close()
        old = fetch(base, "/review?outcome=any&evaluator=refusal")
        assert old.status == 302 and old.location == "/review/results?outcome=any&evaluator=refusal"
        assert fetch(base, "/review/signatures/nothex").status == 400
        assert fetch(base, f"/review/signatures/{'0' * 16}").status == 404
    assert reader is not None
    reader.close()
