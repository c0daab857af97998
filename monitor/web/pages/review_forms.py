"""Reviewing on the page: a verdict's review in force and its history, the review forms, and POST /review/reviews.

A review is written only from a logged-in review session: the form carries the session's CSRF token
(monitor/web/csrf.py) and the post is checked against it and against the browser's Sec-Fetch-Site before anything
is written (through `ReviewWriter`, the daemon's store). Without an API token configured there is no session, so the
page shows no form but a note, and a post is refused. The reviewer's name is remembered in a cookie
(`agent_monitor_reviewer`, SameSite=Strict, Path=/review) and prefilled in the next form.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable
from urllib.parse import quote, unquote

from aiohttp import web

import monitor.web.pages.fmt as fmt
from monitor.review.api_params import ReviewError
from monitor.review.models import ResultItem
from monitor.store.reviews import MAX_LABEL, MAX_NOTE, Agreement, ResultKey, ReviewInput, StoredReview
from monitor.web.access import Access
from monitor.web.csrf import FIELD, csrf_token, refusal
from monitor.web.html import Child, Html, el, join
from monitor.web.pages.layout import ROOT, ReviewSite, error_page, unavailable
from monitor.web.pages.login import safe_next

REVIEWS = f"{ROOT}/reviews"  # where the forms post
REVIEWER_COOKIE = "agent_monitor_reviewer"
REVIEWER_MAX_AGE = 365 * 86400
TOKEN_NOTE = "reviews need a token: api.auth.bearer_token_file"
LOGIN_NOTE = "log in on the review page to review (a bearer token reads the page; the forms need the login session)"
NO_WRITER = "reviews cannot be written here: the result store is disabled (store.enabled: false) or not open"
MAX_FIELD = 200  # evaluator, level, span id and reviewer: longest value taken
MEANING = {  # (the evaluator passed it, the reviewer agrees) -> what the review says
    (False, "agree"): "confirmed failure",
    (False, "disagree"): "false alarm",
    (True, "agree"): "confirmed pass",
    (True, "disagree"): "miss",
    (None, "agree"): "skip confirmed",
    (None, "disagree"): "skip disputed",
}


@runtime_checkable
class ReviewsSource(Protocol):
    """The review reads of the store's reader (monitor/review/review_reads.py)."""

    def reviews_of_traces(self, trace_ids: list[str]) -> list[StoredReview]: ...

    def review_history(self, key: ResultKey) -> list[StoredReview]: ...


@dataclass(frozen=True)
class ReviewForms:
    """What one request's page may offer: `csrf` None means no form (and `note` says why)."""

    csrf: str | None = None
    reviewer: str = ""
    back: str = ROOT  # the page the forms lead back to
    note: str | None = None

    @property
    def enabled(self) -> bool:
        return self.csrf is not None


@dataclass(frozen=True)
class Reviews:
    """The reviews in force of some results, the earlier ones of each (newest first), and a read problem."""

    in_force: Mapping[ResultKey, StoredReview] = field(default_factory=dict)
    earlier: Mapping[ResultKey, list[StoredReview]] = field(default_factory=dict)
    problem: str | None = None


def key_of(item: ResultItem) -> ResultKey:
    return ResultKey(item.trace_id, item.evaluator, item.level, item.span_id or "")


def reviewer_of(request: web.BaseRequest) -> str:
    """The reviewer's name the cookie remembers ("" when none)."""
    raw = request.cookies.get(REVIEWER_COOKIE, "")
    return " ".join(unquote(raw).split())[:MAX_FIELD]


def forms_for(site: ReviewSite, request: web.BaseRequest, back: str) -> ReviewForms:
    """The forms this request's page may show: only to a review session, with a token configured and a writer."""
    access = site.access if site.access is not None else Access(site.token)
    if not access.token:
        return ReviewForms(note=TOKEN_NOTE)
    if site.reviewing is None:
        return ReviewForms(note=NO_WRITER)
    token = csrf_token(access, request)
    if token is None:
        return ReviewForms(note=LOGIN_NOTE)
    return ReviewForms(token, reviewer_of(request), safe_next(back))


def read_reviews(reader: object, trace_ids: Iterable[str], history: bool) -> Reviews:
    """The reviews in force of the traces' results (and, with `history`, the earlier reviews of each); none from a
    reader without reviews. Blocking: run it in a worker thread."""
    if not isinstance(reader, ReviewsSource):
        return Reviews()
    in_force = {review.key: review for review in reader.reviews_of_traces(list(dict.fromkeys(trace_ids)))}
    earlier: dict[ResultKey, list[StoredReview]] = {}
    if history:
        for key, review in in_force.items():
            earlier[key] = [r for r in reader.review_history(key) if r.review_id != review.review_id]
    return Reviews(in_force, earlier)


# --- rendering ------------------------------------------------------------------------------------------------


def _meaning(review: StoredReview) -> str:
    return MEANING.get((review.verdict_passed, review.agreement), review.agreement)


def _corrections(review: StoredReview) -> list[Child]:
    parts: list[Child] = []
    if review.corrected_score is not None:
        parts.append(el("span", f"score → {fmt.score(review.corrected_score)}", class_="correction"))
    if review.corrected_label:
        parts.append(el("span", f"label → {review.corrected_label}", class_="correction"))
    return parts


def review_summary(review: StoredReview) -> Html:
    """The review in force: agree/disagree (what it means for this verdict), who, when, corrections, note."""
    head = el("span", review.agreement, class_=f"badge review-{review.agreement}")
    who = el("span", f" {_meaning(review)} · {review.reviewer} · {fmt.utc(review.created_at)}", class_="who")
    note = el("div", review.note, class_="review-note pre") if review.note else None
    return el("div", head, who, *_corrections(review), note, class_="review")


def history_block(earlier: list[StoredReview]) -> Html | None:
    """The earlier reviews of a result (newest first), folded."""
    if not earlier:
        return None
    items = [
        el(
            "li",
            el("span", r.agreement, class_=f"badge review-{r.agreement}"),
            f" {r.reviewer} · {fmt.utc(r.created_at)} (until {fmt.utc(r.superseded_at)})",
            *_corrections(r),
            el("div", r.note, class_="review-note pre") if r.note else None,
        )
        for r in earlier
    ]
    return el(
        "details",
        el("summary", f"history ({len(earlier)} earlier)"),
        el("ol", items),
        class_="review-history",
    )


def _hidden(key: ResultKey, forms: ReviewForms) -> list[Html]:
    values = {FIELD: forms.csrf, "trace_id": key.trace_id, "evaluator": key.evaluator, "level": key.level}
    values |= {"span_id": key.span_id, "next": forms.back}
    return [el("input", type="hidden", name=name, value=value or "") for name, value in values.items()]


def _buttons(verdict: str | None) -> list[Html]:
    """Agree and disagree, each saying what it means for a verdict of `verdict` (pass, fail, skip)."""
    passed = {"pass": True, "fail": False}.get(verdict or "")
    return [
        el("button", "agree", type="submit", name="agreement", value="agree", class_="agree",
           title=MEANING[(passed, "agree")]),
        el("button", "disagree", type="submit", name="agreement", value="disagree", class_="disagree",
           title=MEANING[(passed, "disagree")]),
    ]  # fmt: skip


def review_form(key: ResultKey, outcome: str, forms: ReviewForms, current: StoredReview | None) -> Html | None:
    """The full review form (folded under "review" or "change review"): name, corrected score and label, note."""
    if not forms.enabled:
        return None

    def labelled(text: str, control: Html) -> Html:
        return el("label", el("span", text), control)

    name = el("input", type="text", name="reviewer", value=forms.reviewer, required=True, maxlength=MAX_FIELD)
    form = el(
        "form",
        _hidden(key, forms),
        labelled("reviewer", name),
        labelled("corrected score", el("input", type="number", name="corrected_score", step="any")),
        labelled("corrected label", el("input", type="text", name="corrected_label", maxlength=MAX_LABEL)),
        labelled("note", el("textarea", name="note", maxlength=MAX_NOTE, rows=2)),
        el("span", _buttons(outcome), class_="review-buttons"),
        method="post",
        action=REVIEWS,
        class_="review",
    )
    return el("details", el("summary", "change review" if current else "review"), form, class_="review-form")


def quick_form(key: ResultKey, outcome: str, forms: ReviewForms) -> Html | None:
    """A row's compact form: agree or disagree, under the remembered name (asked for when there is none)."""
    if not forms.enabled:
        return None
    if forms.reviewer:
        name = el("input", type="hidden", name="reviewer", value=forms.reviewer)
    else:
        name = el("input", type="text", name="reviewer", placeholder="your name", required=True,
                  maxlength=MAX_FIELD, aria_label="reviewer", class_="reviewer")  # fmt: skip
    return el("form", _hidden(key, forms), name, _buttons(outcome), method="post", action=REVIEWS,
              class_="quick-review")  # fmt: skip


def review_parts(key: ResultKey, outcome: str, reviews: Reviews, forms: ReviewForms, full: bool) -> list[Child]:
    """A verdict's review: the one in force, its history and the form (`full`: the folded full form, else the
    quick one); the trace page's column and the conversation page's verdicts show it alike."""
    current = reviews.in_force.get(key)
    shown: Child = review_summary(current) if current else el("span", "not reviewed", class_="muted")
    if full:
        return [shown, history_block(list(reviews.earlier.get(key, []))), review_form(key, outcome, forms, current)]
    return [shown, quick_form(key, outcome, forms)]


def review_cell(item: ResultItem, reviews: Reviews, forms: ReviewForms, full: bool) -> Html:
    """A verdict's review column: the review in force, its history and the form (`full`: the trace page's)."""
    return el("td", review_parts(key_of(item), item.outcome, reviews, forms, full), class_="review")


def forms_note(forms: ReviewForms, reviews: Reviews) -> Html | None:
    """Why the page has no review forms, and a failure to read the reviews."""
    notes = [el("p", forms.note, class_="muted review-note-line") if forms.note else None]
    if reviews.problem:
        notes.append(el("p", f"Reviews could not be read: {reviews.problem}", class_="problem"))
    return join(*notes) if any(n is not None for n in notes) else None


# --- POST /review/reviews ---------------------------------------------------------------------------------------


class FormError(ValueError):
    """A form field that cannot be taken; the message names it."""


def _text(form: Mapping[str, Any], name: str, limit: int, required: bool = False) -> str | None:
    value = form.get(name)
    if not isinstance(value, str):
        value = ""
    text = value.strip() if name == "note" else " ".join(value.split())  # a note keeps its lines
    if not text:
        if required:
            raise FormError(f"{name}: required")
        return None
    if len(text) > limit:
        raise FormError(f"{name}: at most {limit} characters")
    return text


def parse_review(form: Mapping[str, Any]) -> ReviewInput:
    """The review a form posts (FormError for a field that cannot be taken)."""
    trace_id = _text(form, "trace_id", 32, required=True) or ""
    if len(trace_id) != 32 or any(c not in "0123456789abcdefABCDEF" for c in trace_id):
        raise FormError("trace_id: 32 hexadecimal digits")
    agreement = form.get("agreement")
    if agreement not in ("agree", "disagree"):
        raise FormError("agreement: agree or disagree")
    score_text = _text(form, "corrected_score", 64)
    score = None
    if score_text is not None:
        try:
            score = float(score_text)
        except ValueError:
            raise FormError("corrected score: a number") from None
        if not math.isfinite(score):
            raise FormError("corrected score: a finite number")
    key = ResultKey(
        trace_id.lower(),
        _text(form, "evaluator", MAX_FIELD, required=True) or "",
        _text(form, "level", MAX_FIELD, required=True) or "",
        _text(form, "span_id", MAX_FIELD) or "",
    )
    return ReviewInput(
        key,
        cast(Agreement, agreement),
        _text(form, "reviewer", MAX_FIELD, required=True) or "",
        score,
        _text(form, "corrected_label", MAX_LABEL),
        _text(form, "note", MAX_NOTE),
    )


def review_routes(site: ReviewSite) -> list[web.RouteDef]:
    """POST /review/reviews: a review from the page's forms, then 303 back to the page it came from."""
    access = site.access if site.access is not None else Access(site.token)

    async def post(request: web.Request) -> web.Response:
        if not access.token:
            return error_page(site, 403, "forbidden", f"Nothing can be reviewed: {TOKEN_NOTE}.")
        form = await request.post()
        offered = form.get(FIELD)
        why = refusal(access, request, offered if isinstance(offered, str) else None)
        if why is not None:
            return error_page(site, 403, "forbidden", why)
        if site.reviewing is None:
            return unavailable(site, NO_WRITER)
        try:
            review = parse_review(form)
        except FormError as exc:
            return error_page(site, 400, "bad request", str(exc))
        try:
            await site.reviewing.review(review)
        except ReviewError as exc:
            title = {404: "result not found", 409: "reviewed at the same moment"}.get(exc.status, "review unavailable")
            return error_page(site, exc.status, title, str(exc))
        back = form.get("next")
        response = web.Response(status=303, headers={"Location": safe_next(back if isinstance(back, str) else None)})
        response.set_cookie(
            REVIEWER_COOKIE,
            quote(review.reviewer, safe=""),
            path=ROOT,
            max_age=REVIEWER_MAX_AGE,
            samesite="Strict",
            secure=True if request.secure else None,
        )
        return response

    return [web.post(REVIEWS, post)]
