"""Reviewing on the page in a real headless Chromium (issue 28) over a real SQLite store: a logged-in reviewer
disagrees with a failing verdict on the trace page and sees the review, changes it and sees the history, reviews
from the results list; a form of another site posting to the page is refused and writes nothing; without a token
the page has no form and a direct post is refused."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from tests.monitor.web.pages.review_store import FAILING, TRACE, log_in_on_the_way, review_server
from tests.monitor.web.pages.test_browser import TIMEOUT_MS, browser  # noqa: F401  (the Chromium fixture)
from tests.support.metrics_port import serve

pytestmark = pytest.mark.integration
TRACE_PAGE = f"/review/traces/{TRACE}"


def hostile_app(target: str) -> web.Application:
    """Another site's page with a form posting a review to `target` (its csrf field guessed)."""
    fields = {"csrf": "0" * 64, "trace_id": TRACE, "evaluator": FAILING, "level": "trace", "span_id": "",
              "agreement": "agree", "reviewer": "mallory", "next": "/review"}  # fmt: skip
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    body = f'<!doctype html><form method="post" action="{target}">{inputs}<button id="go">win a prize</button></form>'

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.add_routes([web.get("/", index)])
    return app


def test_a_reviewer_disagrees_changes_the_review_and_another_site_cannot_post(  # type: ignore[no-untyped-def]
    browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    with review_server(tmp_path) as site, serve(hostile_app(f"{site.base}/review/reviews")) as evil:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        csp: list[str] = []
        page.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text else None)

        # log in on the way to the trace page
        log_in_on_the_way(page, site.base, TRACE_PAGE)

        # disagree with the failing verdict: a false alarm, with a note and a corrected label
        row = page.locator("table.verdicts tbody tr.row-fail")
        assert row.locator("td.review").inner_text().startswith("not reviewed")
        row.locator("details.review-form summary").click()
        assert row.locator("input[name=reviewer]").input_value() == ""
        row.locator("input[name=reviewer]").fill("ann")
        row.locator("input[name=corrected_label]").fill("faithful")
        row.locator("textarea[name=note]").fill("the refund tool did run")
        with page.expect_navigation() as navigation:
            row.locator("button.disagree").click()
        assert navigation.value is not None and navigation.value.status == 200
        assert page.url == f"{site.base}{TRACE_PAGE}#verdicts"
        review = row.locator("td.review div.review")
        assert "disagree" in review.inner_text() and "false alarm · ann" in review.inner_text()
        assert "label → faithful" in review.inner_text() and "the refund tool did run" in review.inner_text()
        name = next(c for c in page.context.cookies() if c["name"] == "agent_monitor_reviewer")
        assert name["value"] == "ann" and name["sameSite"] == "Strict" and name["path"] == "/review"
        page.screenshot(path=str(tmp_path / "01-reviewed.png"), full_page=True)

        # change it: the name is remembered; the earlier review goes to the history
        row.locator("details.review-form summary", has_text="change review").click()
        assert row.locator("input[name=reviewer]").input_value() == "ann"
        row.locator("textarea[name=note]").fill("on reflection the claim is unsupported")
        with page.expect_navigation():
            row.locator("button.agree").click()
        assert "confirmed failure · ann" in row.locator("td.review div.review").first.inner_text()
        history = row.locator("details.review-history")
        assert history.locator("summary").inner_text() == "history (1 earlier)"
        assert not history.locator("ol").is_visible()
        history.locator("summary").click()
        assert "disagree" in history.locator("ol").inner_text() and "the refund tool did run" in history.inner_text()
        page.screenshot(path=str(tmp_path / "02-history.png"), full_page=True)
        assert [r[1:] for r in site.reviews()] == [
            ("disagree", "ann", "the refund tool did run", 1),
            ("agree", "ann", "on reflection the claim is unsupported", 0),
        ]

        # the results list: one click under the remembered name, back to the list
        page.goto(f"{site.base}/review/results")
        result = page.locator("table.results tbody tr.row-fail")
        assert "confirmed failure · ann" in result.locator("td.review").inner_text()
        with page.expect_navigation():
            result.locator("form.quick-review button.disagree").click()
        assert page.url == f"{site.base}/review/results"
        assert "false alarm · ann" in page.locator("table.results tbody tr.row-fail td.review").inner_text()
        assert len(site.reviews()) == 3

        # another site's form posting to the page: refused, nothing written
        other = browser.new_page()  # the same browser context's cookies: the session is there
        other.set_default_timeout(TIMEOUT_MS)
        port = urlsplit(evil).port
        other.goto(f"http://localhost:{port}/")  # localhost is another site than 127.0.0.1
        with other.expect_navigation() as navigation:
            other.click("#go")
        assert navigation.value is not None and navigation.value.status == 403
        assert "only accepts posts from this site" in other.inner_text("main")
        assert len(site.reviews()) == 3
        assert dialogs == [] and csp == []

    # without a token: no form, a note, and a direct post is refused
    with review_server(tmp_path / "open", token=None) as site:
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{site.base}{TRACE_PAGE}")
        assert page.locator("table.verdicts").is_visible()
        assert page.locator("form[action='/review/reviews']").count() == 0
        assert "reviews need a token: api.auth.bearer_token_file" in page.inner_text("main")
        answer = page.request.post(f"{site.base}/review/reviews", form={"trace_id": TRACE, "evaluator": FAILING,
                                   "level": "trace", "agreement": "agree", "reviewer": "ann"})  # fmt: skip
        assert answer.status == 403 and "reviews need a token" in answer.text()
        assert site.reviews() == []
