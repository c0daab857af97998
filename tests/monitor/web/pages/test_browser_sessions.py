"""The conversations pages in a real headless Chromium over a real store (rows as the schema v5 contract says the
write side leaves them): the sessions list filtered to failing ones, a session as a chat transcript with each
verdict beside the turn it names and the others at the top, each turn linked to its trace page and back, a
session-level result in the results list linked to its conversation; hostile text stays text; 400, 404, 503; a
logged-in reviewer disagrees with a verdict beside a turn, lands back at it and sees the review (the API too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.web.app import build_api_app
from monitor.web.pages.layout import CSP
from tests.monitor.review.test_session_reader import seeded, tid
from tests.monitor.web.pages.review_store import TOKEN, log_in_on_the_way, session_review_server
from tests.monitor.web.pages.test_browser import TIMEOUT_MS, browser  # noqa: F401  (the fixture)
from tests.support.backends import sqlite_backend
from tests.support.metrics_port import fetch, serve
from tests.support.session_rows import SessionRow, TurnRow, insert_session, insert_session_result

pytestmark = pytest.mark.integration  # each test starts a process or a server

HOSTILE = '<img src=x onerror="document.title=1">'


def app_over(tmp_path: Path):  # type: ignore[no-untyped-def]
    backend = sqlite_backend(tmp_path)
    now, _ = seeded(backend)
    hostile = SessionRow("conv <b>bold</b>", [TurnRow(tid(40), now - 400, HOSTILE, f"echo {HOSTILE}")], now - 20)
    insert_session(backend, hostile)
    insert_session_result(backend, hostile, "user_frustration", 0, now - 20, HOSTILE, turn=1)
    reader = backend.reader()
    names = ["user_rephrase", "human_handoff_request", "conversation_completion", "user_frustration"]
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, None, reader=reader, evaluators_info=names)
    return app, reader


def test_sessions_pages(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    app, reader = app_over(tmp_path)
    with serve(app) as base:
        page = browser.new_page()
        response = page.goto(f"{base}/review/sessions?failing=true")
        assert response is not None and response.status == 200
        assert response.headers["content-security-policy"] == CSP
        rows = page.locator("table.sessions tbody tr")
        assert [rows.nth(i).get_attribute("data-session") for i in range(rows.count())] == ["conv-rephrase"]
        assert "user_rephrase" in rows.nth(0).inner_text() and "idle" in rows.nth(0).inner_text()

        with page.expect_navigation():
            rows.nth(0).locator("a.session").click()
        assert page.url.endswith("/review/sessions/conv-rephrase")
        top = page.locator(".session-verdicts .verdict")
        assert [top.nth(i).get_attribute("data-evaluator") for i in range(top.count())] == ["conversation_completion"]
        turns = page.locator("section.turn")
        assert [turns.nth(i).get_attribute("id") for i in range(turns.count())] == ["turn-1", "turn-2", "turn-3"]
        second, third = turns.nth(1), turns.nth(2)
        assert second.locator(".bubble.user").inner_text().endswith("I asked where order 42 IS")
        assert "(no answer)" in second.locator(".bubble.agent").inner_text()
        assert "lookup_order" in second.locator(".tools").inner_text()
        assert "HTTP 503" in second.locator(".turn-error").inner_text()
        assert second.locator(".turn-verdicts .verdict").get_attribute("data-evaluator") == "user_rephrase"
        assert third.locator(".turn-verdicts .verdict").get_attribute("data-evaluator") == "human_handoff_request"
        assert turns.nth(0).locator(".turn-verdicts").count() == 0
        user = second.locator(".bubble.user").bounding_box()
        verdicts = second.locator(".turn-verdicts").bounding_box()
        assert user is not None and verdicts is not None
        assert verdicts["x"] > user["x"] + user["width"]  # beside the turn (the stylesheet applies under the CSP)
        page.screenshot(path=str(tmp_path / "session.png"), full_page=True)

        with page.expect_navigation():
            second.locator("a.trace").click()
        assert page.url.endswith(f"/review/traces/{tid(2)}")
        with page.expect_navigation():
            page.locator(".session-link a").click()  # back: the trace is a turn of a stored conversation
        assert page.url.endswith("/review/sessions/conv-rephrase")

        page.goto(f"{base}/review/results?evaluator=human_handoff_request")
        result = page.locator("table.results tbody tr")
        assert result.count() == 1
        with page.expect_navigation():
            result.nth(0).locator("a.session").click()
        assert page.url.endswith("/review/sessions/conv-rephrase")

        page.goto(f"{base}/review/sessions?evaluator=user_frustration")
        with page.expect_navigation():
            page.locator("table.sessions a.session").click()
        assert page.locator("h1 code").inner_text() == "conv <b>bold</b>"
        assert page.locator(".bubble.user").inner_text().endswith(HOSTILE)
        assert page.locator("main img").count() == 0 and page.locator("main b").count() == 0
        assert page.title() != "1"
        assert page.locator(".turn-verdicts .verdict").get_attribute("data-evaluator") == "user_frustration"
        page.close()

        assert fetch(base, "/review/sessions/no-such-conversation").status == 404
        assert fetch(base, f"/review/sessions/{'x' * 300}").status == 400
        assert fetch(base, "/review/sessions?since=1h&until=2h").status == 400
    reader.close()


def test_sessions_pages_without_a_store_or_a_login() -> None:
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, None, reader=None, evaluators_info=[])
    with serve(app) as base:
        for path in ("/review/sessions", "/review/sessions/conv-1"):
            answer = fetch(base, path)
            assert answer.status == 503 and "review unavailable" in answer.body, path
            assert answer.headers["Content-Security-Policy"] == CSP
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, "s3cret", reader=None, evaluators_info=[])
    with serve(app) as base:
        for path in ("/review/sessions", "/review/sessions/conv-1"):
            assert fetch(base, path).status == 401, path  # a token configured: the page needs the login


def test_the_trace_page_of_a_turn_links_its_conversation(tmp_path: Path) -> None:
    app, reader = app_over(tmp_path)
    with serve(app) as base:
        turn = fetch(base, f"/review/traces/{tid(1)}")
        assert turn.status == 200 and 'href="/review/sessions/conv-rephrase"' in turn.body
        hostile = fetch(base, f"/review/traces/{tid(40)}")
        assert 'href="/review/sessions/conv%20%3Cb%3Ebold%3C%2Fb%3E"' in hostile.body
        assert "<b>bold</b>" not in hostile.body
    reader.close()


def test_a_reviewer_disagrees_with_a_turns_verdict_on_the_conversation_page(  # type: ignore[no-untyped-def]
    browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    conversation = "/review/sessions/conv-rephrase"
    with session_review_server(tmp_path) as site:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        csp: list[str] = []
        page.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text else None)
        log_in_on_the_way(page, site.base, conversation)

        top = page.locator(".session-verdicts .verdict")
        assert top.locator("form[action='/review/reviews']").count() == 1  # the whole conversation's verdict
        verdict = page.locator("#turn-2 .turn-verdicts .verdict")
        assert verdict.get_attribute("id") == "verdict-user_rephrase"
        assert verdict.locator(".verdict-review").inner_text().startswith("not reviewed")
        assert not verdict.locator("form.review").is_visible()  # folded: the aside stays narrow
        verdict.locator("details.review-form summary").click()
        form = verdict.locator("form.review")
        aside, box = page.locator("#turn-2 aside").bounding_box(), form.bounding_box()
        assert aside is not None and box is not None and box["x"] + box["width"] <= aside["x"] + aside["width"] + 1
        form.locator("input[name=reviewer]").fill("ann")
        form.locator("input[name=corrected_label]").fill("clarification")
        form.locator("textarea[name=note]").fill("the user added detail, not a rephrase")
        with page.expect_navigation() as navigation:
            form.locator("button.disagree").click()
        assert navigation.value is not None and navigation.value.status == 200
        assert page.url == f"{site.base}{conversation}#verdict-user_rephrase"
        shown = page.locator("#verdict-user_rephrase div.review").inner_text()
        assert "disagree" in shown and "false alarm · ann" in shown and "label → clarification" in shown
        assert "the user added detail" in shown
        assert "not reviewed" in page.locator("#verdict-human_handoff_request").inner_text()
        page.screenshot(path=str(tmp_path / "session-reviewed.png"), full_page=True)
        assert csp == []

        bearer = {"Authorization": f"Bearer {TOKEN}"}
        listed = json.loads(fetch(site.base, "/api/v1/reviews?evaluator=user_rephrase", bearer).body)
        assert [(r["trace_id"], r["level"], r["span_id"], r["agreement"], r["reviewer"], r["corrected_label"])
                for r in listed["items"]] == [(tid(3), "session", "", "disagree", "ann", "clarification")]  # fmt: skip
        results = json.loads(fetch(site.base, "/api/v1/results?evaluator=user_rephrase&outcome=fail", bearer).body)
        found = [(r["session_id"], r["review"]["agreement"]) for r in results["items"]]
        assert found == [("conv-rephrase", "disagree")]
        page.close()
