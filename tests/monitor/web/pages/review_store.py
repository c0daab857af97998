"""A real SQLite result store holding one reviewed-to-be trace (or, `session_review_server`, the stored
conversations of tests/monitor/review/test_session_reader.py), served by the metrics port's real app with the review
reader and `ReviewWriter` over it (as the daemon wires them), for the page's review tests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from monitor.auth import SESSION_COOKIE
from monitor.config.review import ReviewConfig
from monitor.review.of_store import reader_of
from monitor.store.sqlite import ResultStore
from monitor.web.app import build_api_app
from monitor.web.review_writer import ReviewWriter
from tests.monitor.review.test_session_reader import seeded
from tests.support.backends import sqlite_backend
from tests.support.metrics_port import Answer, fetch, post_form, serve
from tests.support.store_builders import outcome, row

TOKEN = "page-review-token"
TRACE = "ab" * 16
FAILING = "faithful"  # fails on TRACE
PASSING = "polite"  # passes on TRACE (store.results: all keeps it)
EXPLANATION = "claims a refund the tool never made"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


@dataclass
class ReviewSite:
    base: str
    store: ResultStore

    def reviews(self) -> list[tuple]:
        """Every stored review (in force or not): evaluator, agreement, reviewer, note, superseded."""
        return self.store.transaction(
            lambda db: db.execute(
                "SELECT evaluator, agreement, reviewer, note, superseded_at IS NOT NULL FROM reviews"
                " ORDER BY created_at"
            ).fetchall()
        )


def review_store(path: Path) -> ResultStore:
    store = ResultStore(path, results="all")
    store.write(
        [
            outcome(
                TRACE,
                row(FAILING, False, explanation=EXPLANATION),
                row(PASSING, True),
                given="where is my order?",
                answer="refunded",
            )
        ]
    )
    return store


@contextmanager
def review_server(tmp_path: Path, token: str | None = TOKEN, writer: bool = True) -> Iterator[ReviewSite]:
    """The port on 127.0.0.1 over a fresh store in `tmp_path`; `writer` False: no `ReviewWriter` wired."""
    with _served(review_store(tmp_path / "results.db"), token, writer) as site:
        yield site


@contextmanager
def session_review_server(tmp_path: Path, token: str | None = TOKEN) -> Iterator[ReviewSite]:
    """The port over a store holding the conversations of `seeded` (conv-rephrase: user_rephrase failing on
    turn 2, human_handoff_request failing on turn 3, conversation_completion passing the whole conversation)."""
    backend = sqlite_backend(tmp_path)
    seeded(backend)
    with _served(ResultStore(backend.location, results="all"), token, True) as site:
        yield site


@contextmanager
def _served(store: ResultStore, token: str | None, writer: bool) -> Iterator[ReviewSite]:
    reader = reader_of(store)
    app = build_api_app(
        lambda accept: (b"# metrics\n", "text/plain"),
        lambda: {"ok": True},
        token,
        reader=reader,
        review=ReviewConfig(page_size=20),
        reviewing=ReviewWriter(store) if writer else None,
    )
    try:
        with serve(app) as base:
            yield ReviewSite(base, store)
    finally:
        reader.close()
        store.close()


def log_in(base: str, token: str = TOKEN) -> str:
    """A review session's cookie value."""
    answer = post_form(base, "/review/login", urlencode({"token": token, "next": "/review"}))
    assert answer.status == 303, answer.body
    return cookies(answer)[SESSION_COOKIE].value


def log_in_on_the_way(page: Any, base: str, path: str, token: str = TOKEN) -> Any:
    """In a browser `page`: open `path`, which sends to the login form first, log in there and land back on
    `path`; the response of that last navigation."""
    page.goto(f"{base}{path}")
    assert page.url.startswith(f"{base}/review/login"), page.url
    page.fill("#token", token)
    with page.expect_navigation() as navigation:
        page.click("form.login button")
    assert page.url == f"{base}{path}", page.url
    return navigation.value


def cookies(answer: Answer) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for header in answer.headers.get_all("Set-Cookie") or []:
        jar.load(header)
    return jar


def page(base: str, path: str, cookie: str = "") -> Answer:
    return fetch(base, path, {"Cookie": cookie} if cookie else {})


def csrf_of(body: str) -> str:
    found = CSRF.search(body)
    assert found is not None, "no review form on the page"
    return found.group(1)
