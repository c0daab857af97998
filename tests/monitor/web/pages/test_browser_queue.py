"""The review queue in a real headless Chromium: a reviewer signs in and works through the queue with the keyboard
(d disagrees, s skips, a agrees; keys typed into a text field stay text); the reviews land in the store (read back
with the review reader), the progress moves, and the keys' script runs under the page's CSP without a violation;
then the reviews show on the trace page, in the API and in the agreement figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.review.agreement import agreement_by_evaluator
from monitor.web.pages.layout import QUEUE_CSP
from tests.monitor.web.pages.queue_site import ORDER, T1, T3, TOKEN, queue_site
from tests.monitor.web.pages.review_store import log_in_on_the_way
from tests.monitor.web.pages.test_browser import TIMEOUT_MS, browser  # noqa: F401 (the fixture)

pytestmark = pytest.mark.integration


def test_queue_keys(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with queue_site(tmp_path / "r.db") as site:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
        page.on("pageerror", lambda error: problems.append(str(error)))

        response = log_in_on_the_way(page, site.base, "/review/queue", TOKEN)
        assert response is not None and response.headers["content-security-policy"] == QUEUE_CSP

        def shown() -> tuple[str, str]:
            return page.input_value("input[name=trace_id]"), page.input_value("input[name=evaluator]")

        def progress() -> str:
            return page.inner_text("#queue-progress")

        def key(name: str) -> None:
            page.evaluate("document.activeElement && document.activeElement.blur()")
            with page.expect_navigation():
                page.keyboard.press(name)

        assert shown() == (ORDER[0].trace_id, ORDER[0].evaluator) and "sample 3" in progress()
        page.fill("#queue-reviewer", "ann")
        key("d")  # disagree: a false alarm
        assert page.url == f"{site.base}/review/queue?saved=1" and page.is_visible("#queue-saved")
        assert shown() == (ORDER[1].trace_id, ORDER[1].evaluator)
        assert "you 1 · everyone 1" in progress() and "sample 2" in progress()
        assert page.input_value("#queue-reviewer") == "ann"  # remembered

        key("s")  # skip: no review
        assert shown() == (ORDER[2].trace_id, ORDER[2].evaluator) and "sample 2" in progress()

        page.click("#queue-note")
        page.keyboard.type("a sound answer, as asked")  # a, d and s typed into the note stay text
        assert page.url == f"{site.base}/review/queue" and page.input_value("#queue-note") == "a sound answer, as asked"
        key("a")  # agree
        assert page.is_visible("#queue-empty") and "you 2 · everyone 2" in progress() and "sample 1" in progress()

        [first] = site.reader.reviews_of_trace(T1)
        [last] = site.reader.reviews_of_trace(T3)
        assert (first.evaluator, first.agreement, first.reviewer) == ("faithful", "disagree", "ann")
        assert first.false_alarm and (last.agreement, last.reviewer, last.verdict_passed) == ("agree", "ann", True)
        assert last.note == "a sound answer, as asked"
        assert site.reader.reviews_of_trace(ORDER[1].trace_id) == []

        # The trace page shows the review beside its verdict; the API lists it; the agreement figures count it.
        page.goto(f"{site.base}/review/traces/{T1}")
        body = page.inner_text("body")
        assert "false alarm" in body and "ann" in body
        listed = page.request.get(
            f"{site.base}/api/v1/reviews?evaluator=faithful", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert listed.status == 200
        items = listed.json()["items"]
        assert sorted((i["trace_id"], i["agreement"]) for i in items) == [(T1, "disagree"), (T3, "agree")]
        trace = page.request.get(f"{site.base}/api/v1/traces/{T1}", headers={"Authorization": f"Bearer {TOKEN}"})
        [verdict] = [v for v in trace.json()["results"] if v["evaluator"] == "faithful"]
        assert verdict["review"]["agreement"] == "disagree" and verdict["review"]["reviewer"] == "ann"
        figures = agreement_by_evaluator(site.reader.reviews_in_force())["faithful"]
        assert (figures.alarm_precision.confirmed, figures.alarm_precision.reviewed) == (0, 1)  # a false alarm
        assert (figures.pass_confirmation.confirmed, figures.pass_confirmation.reviewed) == (1, 1)
        assert problems == []
