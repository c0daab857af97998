"""Reviewing on the page (issue 28): the trace page shows each verdict's review in force, its history and a review
form; the results list a compact form per row; POST /review/reviews writes through `ReviewWriter` into a real SQLite
store only from a logged-in review session with the form's CSRF token and a same-site fetch, remembers the
reviewer's name and goes back where it came from; without a token nothing can be reviewed."""

from __future__ import annotations

from html import unescape
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from aiohttp.test_utils import make_mocked_request

from monitor.auth import SESSION_COOKIE
from monitor.config.review import ReviewConfig
from monitor.review.of_store import reader_of
from monitor.store.reviews import ResultKey, StoredReview
from monitor.web.access import Access
from monitor.web.app import build_api_app
from monitor.web.csrf import csrf_token
from monitor.web.pages.review_forms import (
    LOGIN_NOTE,
    NO_WRITER,
    REVIEWER_COOKIE,
    TOKEN_NOTE,
    FormError,
    Reviews,
    parse_review,
    read_reviews,
)
from monitor.web.review_writer import ReviewWriter
from tests.monitor.web.pages.review_store import (
    EXPLANATION,
    FAILING,
    PASSING,
    TOKEN,
    TRACE,
    ReviewSite,
    cookies,
    csrf_of,
    log_in,
    page,
    review_server,
    review_store,
)
from tests.support.metrics_port import Answer, fetch, post_form, serve

TRACE_PAGE = f"/review/traces/{TRACE}"


def review_form(csrf: str, agreement: str = "disagree", evaluator: str = FAILING, **extra: str) -> dict[str, str]:
    form = {"csrf": csrf, "trace_id": TRACE, "evaluator": evaluator, "level": "trace", "span_id": ""}
    return {**form, "agreement": agreement, "reviewer": "ann", "next": f"{TRACE_PAGE}#verdicts", **extra}


def post(site: ReviewSite, form: dict[str, str], cookie: str = "", headers: dict[str, str] | None = None) -> Answer:
    sent = {"Cookie": cookie, **(headers or {})} if cookie else dict(headers or {})
    return post_form(site.base, "/review/reviews", urlencode(form), sent)


@pytest.fixture
def site(tmp_path: Path):  # type: ignore[no-untyped-def]
    with review_server(tmp_path) as served:
        yield served


@pytest.fixture
def session(site: ReviewSite) -> str:
    return f"{SESSION_COOKIE}={log_in(site.base)}"


@pytest.mark.integration
def test_a_logged_in_reviewer_disagrees_sees_the_review_changes_it_and_sees_the_history(
    site: ReviewSite, session: str
) -> None:
    before = page(site.base, TRACE_PAGE, session)
    assert before.status == 200 and EXPLANATION in before.body
    assert before.body.count('action="/review/reviews"') == 2  # the failing and the passing verdict
    assert 'name="reviewer" value=""' in before.body and "not reviewed" in before.body
    form = review_form(csrf_of(before.body), note="the tool did refund: line 2", corrected_score="0.9",
                       corrected_label="faithful", reviewer="  Ann   Lee ")  # fmt: skip
    answer = post(site, form, session)
    assert answer.status == 303 and answer.location == f"{TRACE_PAGE}#verdicts"
    morsel = cookies(answer)[REVIEWER_COOKIE]
    assert morsel.value == quote("Ann Lee", safe="") and morsel["path"] == "/review"
    assert morsel["samesite"] == "Strict" and int(morsel["max-age"]) > 86400
    assert site.reviews() == [(FAILING, "disagree", "Ann Lee", "the tool did refund: line 2", 0)]

    remembered = f"{session}; {REVIEWER_COOKIE}={morsel.value}"
    shown = page(site.base, TRACE_PAGE, remembered).body
    text = unescape(shown)
    assert "false alarm · Ann Lee" in text and "score → 0.90" in text and "label → faithful" in text
    assert "the tool did refund: line 2" in text and "change review" in text
    assert 'name="reviewer" value="Ann Lee"' in shown  # prefilled from the cookie
    assert "history (" not in text

    answer = post(site, review_form(csrf_of(shown), "agree", reviewer="bob", note="on reflection"), remembered)
    assert answer.status == 303
    assert site.reviews() == [
        (FAILING, "disagree", "Ann Lee", "the tool did refund: line 2", 1),
        (FAILING, "agree", "bob", "on reflection", 0),
    ]
    text = unescape(page(site.base, TRACE_PAGE, remembered).body)
    assert "confirmed failure · bob" in text and "history (1 earlier)" in text
    history = text.split("history (1 earlier)", 1)[1]
    assert "Ann Lee" in history and "the tool did refund" in history and "(until " in history


@pytest.mark.integration
def test_a_passing_verdict_disagreed_with_is_a_miss(site: ReviewSite, session: str) -> None:
    csrf = csrf_of(page(site.base, TRACE_PAGE, session).body)
    assert post(site, review_form(csrf, evaluator=PASSING), session).status == 303
    assert "miss · ann" in unescape(page(site.base, TRACE_PAGE, session).body)


@pytest.mark.integration
def test_the_results_list_has_a_quick_form_per_row_that_comes_back_to_the_list(site: ReviewSite, session: str) -> None:
    listing = "/review/results?outcome=any"
    body = page(site.base, listing, session).body
    assert body.count('class="quick-review"') == 2
    assert 'placeholder="your name"' in body  # no name remembered yet: asked for
    back = 'name="next" value="/review/results?outcome=any"'
    assert back in body
    form = review_form(csrf_of(body), "agree", next="/review/results?outcome=any")
    answer = post(site, form, session)
    assert answer.status == 303 and answer.location == listing
    remembered = f"{session}; {REVIEWER_COOKIE}={cookies(answer)[REVIEWER_COOKIE].value}"
    body = unescape(page(site.base, listing, remembered).body)
    assert "confirmed failure · ann" in body
    assert 'type="hidden" name="reviewer" value="ann"' in body and "your name" not in body


@pytest.mark.integration
def test_a_cross_site_post_is_refused_and_writes_nothing(site: ReviewSite, session: str) -> None:
    csrf = csrf_of(page(site.base, TRACE_PAGE, session).body)
    for fetch_site in ("cross-site", "same-site"):
        answer = post(site, review_form(csrf), session, {"Sec-Fetch-Site": fetch_site})
        assert answer.status == 403 and "only accepts posts from this site" in answer.body
    # a browser's cross-site post carries no session (SameSite=Strict): refused as cross-site all the same
    answer = post(site, review_form(csrf), headers={"Sec-Fetch-Site": "cross-site"})
    assert answer.status == 403 and "only accepts posts from this site" in answer.body
    assert site.reviews() == []


@pytest.mark.integration
def test_a_wrong_or_missing_csrf_field_is_refused_and_writes_nothing(site: ReviewSite, session: str) -> None:
    csrf = csrf_of(page(site.base, TRACE_PAGE, session).body)
    other = csrf_of(page(site.base, TRACE_PAGE, f"{SESSION_COOKIE}={log_in(site.base)}").body)
    assert other != csrf  # each session has its own token
    for form in (review_form(other), review_form("0" * 64), review_form("")):
        answer = post(site, form, session, {"Sec-Fetch-Site": "same-origin"})
        assert answer.status == 403 and "reload the page" in answer.body
    without = {k: v for k, v in review_form(csrf).items() if k != "csrf"}
    assert post(site, without, session).status == 403
    assert site.reviews() == []


@pytest.mark.integration
def test_a_bearer_token_reads_the_page_but_the_forms_need_the_login_session(site: ReviewSite) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    body = fetch(site.base, TRACE_PAGE, bearer).body
    assert "<form" not in body.split("<main>", 1)[1] and LOGIN_NOTE in unescape(body)
    answer = post(site, review_form("0" * 64), headers=bearer)
    assert answer.status == 403 and "sign in to review" in answer.body
    assert site.reviews() == []


@pytest.mark.integration
def test_without_a_token_the_page_has_no_form_and_a_post_is_refused(tmp_path: Path) -> None:
    with review_server(tmp_path, token=None) as site:
        body = page(site.base, TRACE_PAGE).body  # loopback reads without a token
        assert EXPLANATION in body and TOKEN_NOTE in body
        assert 'action="/review/reviews"' not in body and 'name="csrf"' not in body
        assert TOKEN_NOTE in page(site.base, "/review/results").body
        answer = post(site, review_form("0" * 64))
        assert answer.status == 403 and TOKEN_NOTE in answer.body
        assert site.reviews() == []


@pytest.mark.integration
def test_without_a_writer_the_page_has_no_form_and_a_post_is_unavailable(tmp_path: Path) -> None:
    with review_server(tmp_path, writer=False) as site:
        session = f"{SESSION_COOKIE}={log_in(site.base)}"
        body = page(site.base, TRACE_PAGE, session).body
        assert NO_WRITER in unescape(body) and 'action="/review/reviews"' not in body
        request = make_mocked_request("POST", "/review/reviews", headers={"Cookie": session})
        answer = post(site, review_form(csrf_token(Access(TOKEN), request) or ""), session)
        assert answer.status == 503 and NO_WRITER in unescape(answer.body)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("change", "status", "says"),
    [
        ({"agreement": "maybe"}, 400, "agreement: agree or disagree"),
        ({"trace_id": "xyz"}, 400, "trace_id: 32 hexadecimal digits"),
        ({"reviewer": "   "}, 400, "reviewer: required"),
        ({"reviewer": "r" * 201}, 400, "reviewer: at most 200 characters"),
        ({"corrected_score": "high"}, 400, "corrected score: a number"),
        ({"corrected_score": "inf"}, 400, "a finite number"),
        ({"note": "n" * 2001}, 400, "note: at most 2000 characters"),
        ({"evaluator": "nope"}, 404, "no stored result of nope"),
        ({"trace_id": "cd" * 16}, 404, "no stored result"),
    ],
)
def test_a_form_that_cannot_be_taken_is_an_error_page_and_writes_nothing(
    site: ReviewSite, session: str, change: dict[str, str], status: int, says: str
) -> None:
    csrf = csrf_of(page(site.base, TRACE_PAGE, session).body)
    answer = post(site, review_form(csrf, **change), session)
    assert answer.status == status and says in unescape(answer.body)
    assert "<h1>" in answer.body and 'href="/review"' in answer.body  # the page's error page
    assert site.reviews() == []


@pytest.mark.integration
@pytest.mark.parametrize("back", ["//evil.example/x", "https://evil.example/", "/api/v1/results", "/review/../x", ""])
def test_next_only_leads_back_under_review_on_this_site(site: ReviewSite, session: str, back: str) -> None:
    csrf = csrf_of(page(site.base, TRACE_PAGE, session).body)
    answer = post(site, review_form(csrf, next=back), session)
    assert answer.status == 303 and answer.location == "/review"


@pytest.mark.integration
def test_reviewers_text_is_shown_as_text(site: ReviewSite, session: str) -> None:
    payload = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    csrf = csrf_of(page(site.base, TRACE_PAGE, session).body)
    answer = post(site, review_form(csrf, reviewer=payload, note=payload, corrected_label=payload), session)
    assert answer.status == 303
    cookie = f"{session}; {REVIEWER_COOKIE}={cookies(answer)[REVIEWER_COOKIE].value}"
    body = page(site.base, TRACE_PAGE, cookie).body
    assert "<img" not in body and "<script" not in body
    assert body.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") >= 3


@pytest.mark.integration
def test_the_review_reads_failing_is_a_note_not_a_failed_page(tmp_path: Path) -> None:
    store = review_store(tmp_path / "results.db")
    real = reader_of(store)

    class Failing:  # the store's reader, its review reads failing
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def reviews_of_traces(self, trace_ids: list[str]) -> list[StoredReview]:
            raise OSError("disk gone")

        def review_history(self, key: ResultKey) -> list[StoredReview]:
            raise AssertionError("not asked: no review in force was read")

    app = build_api_app(lambda accept: (b"", "text/plain"), lambda: {"ok": True}, TOKEN, reader=Failing(),  # type: ignore[arg-type]
                        review=ReviewConfig(), reviewing=ReviewWriter(store))  # fmt: skip
    try:
        with serve(app) as base:
            session = f"{SESSION_COOKIE}={log_in(base)}"
            answer = page(base, TRACE_PAGE, session)
            assert answer.status == 200 and EXPLANATION in answer.body
            assert "Reviews could not be read" in answer.body and "disk gone" in answer.body
            assert page(base, "/review/results", session).status == 200
    finally:
        real.close()
        store.close()
    assert read_reviews(object(), [TRACE], history=True) == Reviews()  # a reader without reviews: none


def test_parse_review_keeps_a_notes_lines_and_folds_other_whitespace() -> None:
    form = review_form("x", note="  first line\nsecond line  ", reviewer="a\tb", corrected_label=" ok ")
    review = parse_review({**form, "trace_id": TRACE.upper(), "corrected_score": " 0.25 "})
    assert review.key == ResultKey(TRACE, FAILING, "trace", "")
    assert (review.note, review.reviewer, review.corrected_label, review.corrected_score) == (
        "first line\nsecond line",
        "a b",
        "ok",
        0.25,
    )
    with pytest.raises(FormError):
        parse_review({**form, "corrected_score": "nan"})
