"""/review/queue over a real SQLite store (tests/monitor/web/pages/queue_site.py): one result at a time with the
verdict, why it is queued, the trace's input and output and a link to its page; agree and disagree write reviews through
`ReviewWriter` (the session and the form's CSRF token required: a cross-site post, a wrong token and a client
without the API token configured write nothing); skip passes over a result for this browser only; progress and
backlog move; the keys' script is served and allowed on this page only."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

import pytest

from monitor.store.reviews import ResultKey
from monitor.web.pages.layout import CSP, QUEUE_CSP
from monitor.web.pages.queue import MAX_SKIP_COOKIE, REVIEWER_COOKIE, SKIPPED_COOKIE, skip_cookie, skipped_of
from tests.monitor.web.pages.queue_site import EXPLANATION, ORDER, T1, TOKEN, queue_site
from tests.support.metrics_port import Answer, fetch, post_form

HTML = {"Accept": "text/html"}


def cookies_of(answer: Answer) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for header in answer.headers.get_all("Set-Cookie") or []:
        jar.load(header)
    return {name: morsel.value for name, morsel in jar.items()}


class Browser:
    """A client that keeps its cookies (as a browser on this site would)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookies: dict[str, str] = {}

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return {**HTML, **({"Cookie": cookie} if cookie else {}), **(extra or {})}

    def get(self, path: str = "/review/queue") -> Answer:
        answer = fetch(self.base, path, self.headers())
        self.cookies.update(cookies_of(answer))
        return answer

    def post(self, path: str, form: dict[str, str], extra: dict[str, str] | None = None) -> Answer:
        answer = post_form(self.base, path, urlencode(form), self.headers(extra))
        self.cookies.update(cookies_of(answer))
        return answer

    def login(self) -> None:
        assert self.post("/review/login", {"token": TOKEN, "next": "/review/queue"}).status == 303


def form_of(page: str, action: str, **changes: str) -> dict[str, str]:
    """The review form's hidden fields as the page gives them, with `action` and `changes`."""
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', page))
    return {**fields, "action": action, **changes}


def shown_key(page: str) -> ResultKey:
    fields = form_of(page, "agree")
    return ResultKey(fields["trace_id"], fields["evaluator"], fields["level"], fields["span_id"])


@pytest.mark.integration
def test_a_reviewer_agrees_disagrees_and_skips_through_the_queue(tmp_path: Path) -> None:
    with queue_site(tmp_path / "r.db") as site:
        browser = Browser(site.base)
        browser.login()
        page = browser.get()
        assert page.status == 200 and page.headers["Content-Security-Policy"] == QUEUE_CSP
        assert shown_key(page.body) == ORDER[0] and EXPLANATION in page.body
        assert "can I get a refund?" in page.body and "yes, 90 days" in page.body
        assert f'href="/review/traces/{T1}"' in page.body
        assert '<script src="/review/static/queue.js" defer>' in page.body
        assert "a 100% sample of faithful" in page.body and "disagree: a false alarm" in page.body
        assert "everyone 0" in page.body and 'data-rule="sample">sample 3<' in page.body

        answer = browser.post(
            "/review/queue", form_of(page.body, "disagree", reviewer="Ann Ødegård", note="policy is real")
        )
        assert answer.status == 303 and answer.location == "/review/queue?saved=1"
        assert browser.cookies[REVIEWER_COOKIE] == "Ann%20%C3%98deg%C3%A5rd"  # any name, as cookie-safe text
        [review] = site.reader.reviews_of_trace(T1)
        assert (review.evaluator, review.agreement, review.reviewer) == ("faithful", "disagree", "Ann Ødegård")
        assert review.note == "policy is real"
        assert review.false_alarm

        page = browser.get("/review/queue?saved=1")
        assert shown_key(page.body) == ORDER[1] and "Review saved." in page.body
        assert 'value="Ann Ødegård"' in page.body and "you 1 · everyone 1" in page.body and ">sample 2<" in page.body
        assert browser.post("/review/queue", form_of(page.body, "skip")).status == 303
        page = browser.get()
        assert shown_key(page.body) == ORDER[2] and ">sample 2<" in page.body  # a skip is no review
        assert browser.post("/review/queue", form_of(page.body, "agree", reviewer="Ann Ødegård")).status == 303
        page = browser.get()
        assert 'id="queue-empty"' in page.body and "skipped here: 1" in page.body
        assert site.reader.reviews_of_trace(ORDER[1].trace_id) == []

        other = Browser(site.base)  # another browser: its own skipped list
        other.login()
        assert shown_key(other.get().body) == ORDER[1]


@pytest.mark.integration
def test_forms_that_do_not_come_from_the_page_write_nothing(tmp_path: Path) -> None:
    with queue_site(tmp_path / "r.db") as site:
        browser = Browser(site.base)
        browser.login()
        page = browser.get()
        form = form_of(page.body, "agree", reviewer="mallory")
        cross = browser.post("/review/queue", form, {"Sec-Fetch-Site": "cross-site"})
        assert cross.status == 403 and "only accepts posts from this site" in cross.body
        forged = browser.post("/review/queue", {**form, "csrf": "0" * 64})
        assert forged.status == 403 and "out of date" in forged.body
        stranger = Browser(site.base)  # no session: the port refuses it before the page
        assert stranger.post("/review/queue", form).status == 401
        assert browser.post("/review/queue", {**form, "reviewer": ""}).status == 400
        assert browser.post("/review/queue", {**form, "trace_id": "nope"}).status == 400
        assert browser.post("/review/queue", {**form, "action": "maybe"}).status == 400
        missing = browser.post("/review/queue", {**form, "evaluator": "unknown"})
        assert missing.status == 404 and "review not saved" in missing.body
        assert site.reader.reviews_in_force() == []


@pytest.mark.integration
def test_without_a_token_the_queue_is_shown_but_nothing_can_be_reviewed(tmp_path: Path) -> None:
    with queue_site(tmp_path / "r.db", token=None) as site:
        browser = Browser(site.base)
        page = browser.get()
        assert page.status == 200 and shown_key_absent(page.body)
        assert "Reviewing needs the API token" in page.body and "<script" not in page.body
        form = {"trace_id": T1, "evaluator": "faithful", "level": "trace", "span_id": "", "reviewer": "ann"}
        refused = browser.post("/review/queue", {**form, "action": "agree", "csrf": ""})
        assert refused.status == 403 and "sign in to review" in refused.body
        assert site.reader.reviews_in_force() == []


def shown_key_absent(page: str) -> bool:
    return 'name="trace_id"' not in page and "faithful" in page


@pytest.mark.integration
def test_without_a_queue_the_page_says_so_and_the_script_is_served_to_all(tmp_path: Path) -> None:
    with queue_site(tmp_path / "r.db", with_queue=False) as site:
        browser = Browser(site.base)
        browser.login()
        answer = browser.get()
        assert answer.status == 503 and "review queue unavailable" in answer.body
        script = fetch(site.base, "/review/static/queue.js")  # open, like the stylesheet: no trace content
        assert script.status == 200 and script.headers["Content-Type"].startswith("text/javascript")
        assert "queue-agree" in script.body
        assert browser.get("/review/results").headers["Content-Security-Policy"] == CSP  # no script elsewhere


def test_the_skipped_list_cookie_keeps_the_newest_skips_within_its_size() -> None:
    keys = [ResultKey(f"{n:032x}", "faithful", "trace", f"span-{n}") for n in range(200)]
    value = ""
    for key in keys:
        value = skip_cookie(skipped_of(value), key)
    kept = skipped_of(value)
    assert len(value) <= MAX_SKIP_COOKIE and kept[-1] == keys[-1] and 20 < len(kept) < 200
    assert kept == keys[-len(kept) :]
    assert skipped_of("not base64 json!") == [] and skipped_of("W1sxLDJdXQ") == []  # [[1,2]]
    assert SKIPPED_COOKIE != REVIEWER_COOKIE
