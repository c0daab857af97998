"""The review queue's page, /review/queue: one result at a time (the verdict, why it is in the queue, the trace's
input, output and first steps, a link to the trace page) with agree / disagree / skip forms, the reviewer's
progress today and each rule's backlog.

The forms post to /review/queue. Agree and disagree write a review through `ReviewWriter`: they need the review
session and the form's CSRF token (monitor/web/csrf.py), so nothing is written without the API token configured.
Skip writes nothing: the result goes into this browser's skipped list (a cookie, the newest MAX_SKIP_COOKIE
characters' worth) and the next one is served. The reviewer's name is remembered in a cookie. A small script
(static/queue.js, the only script of the review page: the CSP allows this site's scripts on this page only) maps
the keys a, d and s to the three buttons; the forms work without it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from urllib.parse import quote, unquote

from aiohttp import web

import monitor.web.pages.fmt as fmt
from monitor import client_json
from monitor.logutil import RateLimitedLogger
from monitor.review.api_params import ReviewError
from monitor.review.models import Step, TraceDetail
from monitor.review.queue import QueueItem, QueueProgress, ReviewQueue
from monitor.store.reviews import MAX_LABEL, MAX_NOTE, ResultKey, ReviewInput
from monitor.web.csrf import FIELD, csrf_token, refusal
from monitor.web.html import Child, Html, el, join, script_file
from monitor.web.pages.layout import LOGIN, QUEUE, ROOT, STATIC_PREFIX, ReviewSite, error_page, respond, shell
from monitor.web.pages.trace import io_block, long_text
from monitor.web.review_writer import ReviewWriter

log = logging.getLogger(__name__)
_problems = RateLimitedLogger(log, per_minute=6)
SCRIPT = f"{STATIC_PREFIX}queue.js"
REVIEWER_COOKIE = "agent_monitor_reviewer"
SKIPPED_COOKIE = "agent_monitor_queue_skipped"
MAX_SKIP_COOKIE = 3000  # characters of the skipped list's cookie (browsers keep 4096 per cookie)
STEPS_SHOWN = 12
TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
ACTIONS = ("agree", "disagree", "skip")
RULE_NAMES = {
    "alerting": "alert firing",
    "new_signature": "new failure signature",
    "near_threshold": "near threshold",
    "sample": "sample",
}
KEY_LIMITS = {"evaluator": 200, "level": 50, "span_id": 200}


@lru_cache(maxsize=1)
def queue_script() -> bytes:
    return resources.files("monitor.web.pages").joinpath("static/queue.js").read_bytes()


# --- the skipped list ----------------------------------------------------------------------------
def skipped_of(cookie: str | None) -> list[ResultKey]:
    """The keys in the skipped-list cookie, oldest first ([] for a missing or malformed one)."""
    if not cookie or len(cookie) > 2 * MAX_SKIP_COOKIE:
        return []
    try:
        values = client_json.loads(base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4)))
    except (ValueError, binascii.Error):
        return []
    if not isinstance(values, list):
        return []
    return [ResultKey(*v) for v in values if isinstance(v, list) and len(v) == 4 and all(isinstance(s, str) for s in v)]


def skip_cookie(skipped: Sequence[ResultKey], key: ResultKey) -> str:
    """The cookie value of `skipped` with `key` added, the oldest left out beyond MAX_SKIP_COOKIE characters."""
    keys = [k for k in skipped if k != key] + [key]
    while True:
        text = json.dumps([list(k) for k in keys], separators=(",", ":"), ensure_ascii=False)
        value = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
        if len(value) <= MAX_SKIP_COOKIE or len(keys) <= 1:
            return value
        keys = keys[1:]


# --- rendering -----------------------------------------------------------------------------------
def verdict_text(item: QueueItem) -> Html:
    outcome = {True: "pass", False: "fail", None: "skip"}[item.passed]
    score = f"score {fmt.score(item.score)}" if item.score is not None else "no score"
    threshold = f" (threshold {item.threshold:g})" if item.threshold is not None else ""
    return el("span", el("span", outcome.upper(), class_=f"outcome {outcome}"), f" {score}{threshold}")


def progress_block(progress: QueueProgress) -> Html:
    parts: list[Child] = []
    for b in progress.backlog:
        text = f"{RULE_NAMES.get(b.rule, b.rule)} {b.results}{'+' if b.more else ''}"
        parts.append(el("span", text, data_rule=b.rule))
    mine = f"you {progress.mine_today} · " if progress.reviewer else ""
    return el(
        "p",
        f"Reviewed today (UTC): {mine}everyone {progress.all_today}. Backlog: ",
        join(*parts, sep=" · ") if parts else "no rule enabled",
        ".",
        id="queue-progress",
        class_="muted",
    )


def steps_excerpt(steps: Sequence[Step]) -> Html | None:
    if not steps:
        return None
    items = [
        el(
            "li",
            el("span", s.kind, class_=f"kind {s.kind}"),
            " ",
            s.name,
            el("span", f" — {s.error}", class_="err") if s.error else None,
        )
        for s in steps[:STEPS_SHOWN]
    ]
    more = el("li", f"… {len(steps) - STEPS_SHOWN} more steps", class_="muted") if len(steps) > STEPS_SHOWN else None
    return el("section", el("h3", "steps"), el("ul", items, more, class_="steps-excerpt"))


def _buttons(item: QueueItem) -> list[Html]:
    labels = {
        False: ("agree: a real failure", "disagree: a false alarm"),
        True: ("agree: it passes", "disagree: a miss"),
        None: ("agree", "disagree"),
    }[item.passed]
    return [
        el("button", el("kbd", "a"), " ", labels[0], type="submit", name="action", value="agree", id="queue-agree"),
        el(
            "button",
            el("kbd", "d"),
            " ",
            labels[1],
            type="submit",
            name="action",
            value="disagree",
            id="queue-disagree",
        ),
        el(
            "button",
            el("kbd", "s"),
            " skip",
            type="submit",
            name="action",
            value="skip",
            id="queue-skip",
            formnovalidate=True,
        ),
    ]


def review_form(item: QueueItem, token: str, reviewer: str | None) -> Html:
    key = item.key
    hidden = [
        el("input", type="hidden", name=FIELD, value=token),
        el("input", type="hidden", name="trace_id", value=key.trace_id),
        el("input", type="hidden", name="evaluator", value=key.evaluator),
        el("input", type="hidden", name="level", value=key.level),
        el("input", type="hidden", name="span_id", value=key.span_id),
    ]
    name = el("label", el("span", "reviewer"), el("input", type="text", name="reviewer", id="queue-reviewer",
              value=reviewer or "", required=True, maxlength=MAX_LABEL, autocomplete="name"))  # fmt: skip
    note = el("label", el("span", "note (optional)"), el("input", type="text", name="note", id="queue-note",
              maxlength=MAX_NOTE))  # fmt: skip
    return el(
        "form",
        hidden,
        el("div", name, note, class_="filters"),
        el("div", _buttons(item), class_="queue-actions"),
        el("p", "Keys: a agree · d disagree · s skip (outside the text fields).", class_="muted"),
        method="post",
        action=QUEUE,
        class_="queue-review",
    )


def no_form_note(site: ReviewSite) -> Html:
    if not site.token:
        return el(
            "p",
            "Reviewing needs the API token: set api.auth.bearer_token_file (or api.auth.bearer_token) and sign in. "
            "Until then the queue can be read but nothing can be reviewed.",
            class_="warn",
            id="queue-no-token",
        )
    return el("p", "Sign in to review: ", el("a", "log in", href=f"{LOGIN}?next={QUEUE}"), class_="warn")


def item_block(site: ReviewSite, item: QueueItem, detail: TraceDetail | None, form: Html) -> Html:
    key = item.key
    where = (
        f" ({key.level}{', span ' + key.span_id if key.span_id else ''})" if key.level != "trace" or key.span_id else ""
    )
    href = f"{ROOT}/traces/{key.trace_id}"
    facts = [
        el("dt", "why"), el("dd", item.reason, class_="queue-reason"),
        el("dt", "verdict"), el("dd", verdict_text(item)),
        el("dt", "explanation"), el("dd", long_text(item.explanation) or "–"),
        el("dt", "evaluated (UTC)"), el("dd", fmt.utc(item.evaluated_at)),
        el("dt", "service"), el("dd", item.service or ""),
        el("dt", "trace"), el("dd", el("a", key.trace_id, href=href, id="queue-trace")),
    ]  # fmt: skip
    trace: list[Child] = [el("p", "The trace is no longer stored.", class_="muted")]
    if detail is not None:
        trace = [io_block(detail.summary), steps_excerpt(detail.steps)]
    return el(
        "section",
        el("h2", el("span", key.evaluator, id="queue-evaluator"), where),
        el("dl", facts, class_="summary"),
        form,
        *trace,
        class_="queue-item",
        data_rule=item.rule,
    )


def queue_page(
    site: ReviewSite,
    item: QueueItem | None,
    detail: TraceDetail | None,
    progress: QueueProgress,
    token: str | None,
    reviewer: str | None,
    skipped: int,
    saved: bool,
    window: float,
) -> Html:
    main: list[Child] = [el("h1", "Review queue"), progress_block(progress)]
    if saved:
        main.append(el("p", "Review saved.", class_="muted", id="queue-saved"))
    if item is None:
        days = f"{window / 86400:g} days" if window >= 86400 else f"{window / 3600:g} hours"
        skips = f" (or was skipped here: {skipped})." if skipped else "."
        text = f"Nothing to review: every result the queue's rules select in the last {days} has a review{skips}"
        main.append(el("p", text, id="queue-empty"))
    else:
        form = review_form(item, token, reviewer) if token is not None else no_form_note(site)
        main.append(item_block(site, item, detail, form))
        if token is not None:
            main.append(script_file(SCRIPT))
    return shell(site, "review queue", main, active="queue")


# --- handlers ------------------------------------------------------------------------------------
class QueuePages:
    """GET and POST /review/queue over the site, the queue and the review writer (None: the store is off)."""

    def __init__(self, site: ReviewSite, queue: ReviewQueue | None, reviewing: ReviewWriter | None) -> None:
        self.site = site
        self.queue = queue
        self.reviewing = reviewing

    def _token(self, request: web.Request) -> str | None:
        access = self.site.access
        return csrf_token(access, request) if access is not None and self.reviewing is not None else None

    async def show(self, request: web.Request) -> web.Response:
        queue, site = self.queue, self.site
        if queue is None or site.reader is None:
            return error_page(site, 503, "review queue unavailable", "The review queue needs the result store "
                              "(store.enabled) and review.queue.enabled.")  # fmt: skip
        reviewer = unquote(request.cookies.get(REVIEWER_COOKIE, ""))[:MAX_LABEL] or None
        skipped = skipped_of(request.cookies.get(SKIPPED_COOKIE))
        try:
            item = await asyncio.to_thread(queue.next, reviewer, set(skipped))
            progress = await asyncio.to_thread(queue.progress, reviewer)
            detail = await asyncio.to_thread(site.reader.trace, item.key.trace_id) if item is not None else None
        except Exception as exc:
            _problems.warning("read", "review queue: reading the result store failed: %r", exc)
            return error_page(
                site, 503, "review unavailable", f"reading the result store failed: {type(exc).__name__}: {exc}"
            )
        page = queue_page(site, item, detail, progress, self._token(request), reviewer, len(skipped),
                          "saved" in request.query, queue.config.window)  # fmt: skip
        return respond(page)

    async def post(self, request: web.Request) -> web.Response:
        site = self.site
        if self.queue is None or self.reviewing is None:
            return error_page(site, 503, "review queue unavailable", "Reviewing needs the result store.")
        form = await request.post()
        fields = {name: str(form.get(name, "")) for name in ("action", "trace_id", "evaluator", "level", "span_id",
                                                               "reviewer", "note", FIELD)}  # fmt: skip
        why = refusal(site.access, request, fields[FIELD]) if site.access is not None else "no access policy"
        if why is not None:
            return error_page(site, 403, "review refused", why)
        problem = _key_problem(fields)
        if problem is not None:
            return error_page(site, 400, "bad request", problem)
        key = ResultKey(fields["trace_id"].lower(), fields["evaluator"], fields["level"], fields["span_id"])
        if fields["action"] == "skip":
            answer = web.Response(status=303, headers={"Location": QUEUE})
            value = skip_cookie(skipped_of(request.cookies.get(SKIPPED_COOKIE)), key)
            answer.set_cookie(
                SKIPPED_COOKIE, value, path=QUEUE, httponly=True, samesite="Strict", secure=request.secure
            )
            return answer
        reviewer = fields["reviewer"].strip()
        if not 1 <= len(reviewer) <= MAX_LABEL:
            return error_page(site, 400, "bad request", f"reviewer: your name, 1 to {MAX_LABEL} characters")
        note = fields["note"].strip()[:MAX_NOTE] or None
        try:
            await self.reviewing.review(ReviewInput(key, fields["action"], reviewer, note=note))  # type: ignore[arg-type]
        except ReviewError as exc:
            return error_page(site, exc.status, "review not saved", str(exc))
        answer = web.Response(status=303, headers={"Location": f"{QUEUE}?saved=1"})
        answer.set_cookie(REVIEWER_COOKIE, quote(reviewer, safe=""), path=ROOT, samesite="Strict",
                          max_age=365 * 86400, secure=request.secure)  # fmt: skip
        return answer


def _key_problem(fields: dict[str, str]) -> str | None:
    if fields["action"] not in ACTIONS:
        return f"action: one of {', '.join(ACTIONS)}"
    if not TRACE_ID.fullmatch(fields["trace_id"]):
        return "trace_id: 32 hexadecimal digits"
    for name, limit in KEY_LIMITS.items():
        if len(fields[name]) > limit or (name != "span_id" and not fields[name]):
            return f"{name}: {'at most ' + str(limit) + ' characters' if fields[name] else 'required'}"
    return None


async def _script(request: web.Request) -> web.Response:
    return web.Response(body=queue_script(), content_type="text/javascript", charset="utf-8")


def queue_routes(site: ReviewSite, queue: ReviewQueue | None, reviewing: ReviewWriter | None) -> list[web.RouteDef]:
    pages = QueuePages(site, queue, reviewing)
    return [web.get(QUEUE, pages.show), web.post(QUEUE, pages.post), web.get(SCRIPT, _script)]
