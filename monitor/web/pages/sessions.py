"""GET /review/sessions (conversations, newest completed first) and /review/sessions/{id} (one conversation as a
chat transcript: the user's and the agent's messages per turn, tools and errors in brief, each turn linked to its
trace page, the verdicts beside the turns they name and the others at the top, each with its review in force and,
for a logged-in review session, the review form: review_forms.py, as on the trace page)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from urllib.parse import quote

import monitor.web.pages.fmt as fmt
from monitor.review.session_models import SessionDetail, SessionItem, SessionsPage, SessionTurn, SessionVerdict
from monitor.store.reviews import ResultKey
from monitor.web.html import Child, Html, el, join
from monitor.web.pages.layout import ROOT, ReviewSite, link, pager, shell
from monitor.web.pages.login import safe_next
from monitor.web.pages.results import field, select, text_input, time_fields, trace_href
from monitor.web.pages.review_forms import ReviewForms, Reviews, forms_note, review_parts
from monitor.web.pages.trace import cost, long_text

SESSIONS = f"{ROOT}/sessions"
MESSAGE_CHARS = 600  # longer messages fold into <details>
ID_CHARS = 40
ERRORS_SHOWN = 3
LEVEL = "session"  # a session-level result row's level (its span id: none)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def session_href(session_id: str, turn: int | None = None) -> str:
    """The session page's path (at the turn when given), the id URL-encoded."""
    return f"{SESSIONS}/{quote(session_id, safe='')}" + (f"#turn-{turn}" if turn else "")


def _state(query: Mapping[str, str]) -> dict[str, str | None]:
    params = {key: query.get(key, "").strip() or None for key in ("service", "evaluator", "since", "until")}
    params["failing"] = "true" if query.get("failing", "").strip().lower() in ("true", "1", "yes", "on") else None
    return params


def _filters(params: Mapping[str, str | None], evaluators: list[str]) -> Html:
    controls = [
        field("evaluator", select("evaluator", [("", "any"), *[(n, n) for n in evaluators]], params.get("evaluator"))),
        field("service", text_input("service", params.get("service"))),
        field(
            "failing only",
            el("input", type="checkbox", name="failing", value="true", id="f-failing", checked=bool(params["failing"])),
        ),
        *time_fields(params),
        el("button", "filter", type="submit"),
    ]
    return el("form", controls, method="get", action=SESSIONS, class_="filters")


def _verdict_badges(item: SessionItem) -> Html:
    badges = [
        el(
            "span",
            v.evaluator,
            class_=f"badge {v.outcome}",
            title=f"{v.outcome}" + (f", turn {v.turn}" if v.turn else ""),
        )
        for v in item.verdicts
    ]
    return join(*badges, sep=" ")


def _session_row(item: SessionItem) -> Html:
    cells = [
        el("td", fmt.utc(item.completed_at), class_="nowrap"),
        el("td", el("a", fmt.clip(item.session_id, ID_CHARS), href=session_href(item.session_id), class_="session")),
        el("td", item.service),
        el("td", str(item.turn_count), class_="num"),
        el("td", item.ended),
        el("td", _verdict_badges(item)),
        el("td", str(item.total_tokens), class_="num"),
        el("td", cost(item.cost_usd), class_="num"),
        el("td", fmt.duration_ms(item.duration_ms), class_="num"),
    ]
    return el("tr", cells, class_="row-fail" if item.failed else None, data_session=item.session_id)


HEADINGS = ("completed (UTC)", "session", "service", "turns", "ended", "verdicts", "tokens", "spend", "duration")


def sessions_page(site: ReviewSite, query: Mapping[str, str], page: SessionsPage, evaluators: list[str]) -> Html:
    params = _state(query)
    links = pager(SESSIONS, params, query, page.next_cursor, ("← newest", "older →"))
    if page.items:
        head = el("thead", el("tr", [el("th", h) for h in HEADINGS]))
        table: Html = el("table", head, el("tbody", [_session_row(i) for i in page.items]), class_="sessions")
    else:
        table = el("p", "No conversations match. Sessions are stored once the daemon completes them (sessions.idle).")
    main = [
        el("h1", "Conversations"),
        _filters(params, evaluators),
        table,
        el("p", join(*links, sep=" · "), class_="pager") if links else None,
    ]
    return shell(site, "sessions", main, active="sessions")


def result_key(v: SessionVerdict) -> ResultKey:
    """The key of a session-level result's row (what a review of it names): its trace (the last turn's when it
    was stored), its evaluator, level "session" and no span."""
    return ResultKey(v.trace_id, v.evaluator, LEVEL, "")


def verdict_anchor(v: SessionVerdict) -> str:
    """The verdict's element id on the conversation page (one result per evaluator per conversation)."""
    return "verdict-" + _UNSAFE.sub("-", v.evaluator)


class ReviewView:
    """The review of each verdict on one conversation page: the reviews read, the forms the request may have,
    and the page they lead back to (at the verdict)."""

    def __init__(self, reviews: Reviews, forms: ReviewForms, page: str) -> None:
        self.reviews, self.forms, self.page = reviews, forms, page
        self.shown = forms.enabled or bool(reviews.in_force)  # as the trace page's review column

    def of(self, v: SessionVerdict) -> Html | None:
        if not self.shown:
            return None
        forms = self.forms
        if forms.enabled:  # back to this verdict of this conversation
            forms = replace(forms, back=safe_next(f"{self.page}#{verdict_anchor(v)}"))
        parts = review_parts(result_key(v), v.outcome, self.reviews, forms, full=True)
        return el("div", parts, class_="verdict-review")


def _verdict(v: SessionVerdict, review: ReviewView | None = None) -> Html:
    """A verdict in brief: badge, evaluator, score, explanation (whole in a <details> when long), its review."""
    score = f" {fmt.score(v.score)}" if v.score is not None else ""
    reason = f" ({v.skip_reason})" if v.skip_reason else ""
    return el(
        "div",
        el("span", v.outcome, class_=f"badge {v.outcome}"),
        " ",
        el("strong", v.evaluator),
        el("span", score + reason, class_="muted"),
        el("div", long_text(v.explanation, 240), class_="text") if v.explanation else None,
        review.of(v) if review is not None else None,
        class_=f"verdict row-{v.outcome}",
        id=verdict_anchor(v),
        data_evaluator=v.evaluator,
    )


def _bubble(who: str, text: str | None, empty: str) -> Html:
    body: Child = long_text(text, MESSAGE_CHARS) if text else el("span", empty, class_="muted")
    return el("div", el("div", who, class_="who"), body, class_=f"bubble {who}")


def _turn(turn: SessionTurn, verdicts: Sequence[SessionVerdict], review: ReviewView) -> Html:
    tools = el("div", "tools: ", ", ".join(turn.tool_calls), class_="tools") if turn.tool_calls else None
    errors = [
        el("div", f"{e.kind} {e.name}: ", el("span", fmt.clip(e.message, 200), class_="err"), class_="turn-error")
        for e in turn.errors[:ERRORS_SHOWN]
    ]
    more = len(turn.errors) - ERRORS_SHOWN
    tokens = f"{turn.input_tokens if turn.input_tokens is not None else '?'} → "
    tokens += f"{turn.output_tokens if turn.output_tokens is not None else '?'} tok"
    meta = el(
        "div",
        el("a", f"turn {turn.turn}", href=f"#turn-{turn.turn}", class_="anchor"),
        " · ",
        el("a", fmt.short_id(turn.trace_id), href=trace_href(turn.trace_id), class_="trace", title=turn.trace_id),
        f" · {fmt.utc(turn.started_at)} · {fmt.duration_ms((turn.ended_at - turn.started_at) * 1000)} · {tokens}",
        " · " if turn.cost_usd is not None else None,
        cost(turn.cost_usd) if turn.cost_usd is not None else None,
        class_="turn-meta",
    )
    chat = el(
        "div",
        meta,
        _bubble("user", turn.user_message, "(no user message)"),
        tools,
        errors,
        el("div", f"+ {more} more errors", class_="muted") if more > 0 else None,
        _bubble("agent", turn.answer, "(no answer)"),
        class_="chat",
    )
    aside = el("aside", [_verdict(v, review) for v in verdicts], class_="turn-verdicts") if verdicts else None
    failing = any(v.outcome == "fail" for v in verdicts)
    return el("section", chat, aside, id=f"turn-{turn.turn}", class_="turn flagged" if failing else "turn")


def _summary(item: SessionItem) -> Html:
    pairs: list[tuple[str, Child]] = [
        ("service", item.service),
        ("session id from", item.source),
        ("started (UTC)", fmt.utc(item.started_at)),
        ("completed (UTC)", fmt.utc(item.completed_at)),
        ("ended", item.ended),
        ("turns", f"{item.turn_count}" + (f" ({item.turns_cut} cut, not kept)" if item.turns_cut else "")),
        ("duration", fmt.duration_ms(item.duration_ms)),
        ("tokens", str(item.total_tokens)),
        ("spend", el("span", cost(item.cost_usd), id="session-cost")),
        ("failing verdicts", el("span", str(item.failed), class_="err" if item.failed else None)),
    ]
    return el("dl", [[el("dt", term), el("dd", value)] for term, value in pairs], class_="summary")


def session_page(
    site: ReviewSite, detail: SessionDetail, reviews: Reviews | None = None, forms: ReviewForms | None = None
) -> Html:
    """The conversation page; `reviews` of its session-level results and the review `forms` the request may have."""
    item = detail.session
    reviews, forms = reviews or Reviews(), forms or ReviewForms()
    review = ReviewView(reviews, forms, session_href(item.session_id))
    numbers = {turn.turn for turn in detail.turns}
    by_trace = {turn.trace_id: turn.turn for turn in detail.turns}
    beside: dict[int, list[SessionVerdict]] = {}
    overall: list[SessionVerdict] = []
    for v in detail.results:
        turn = v.turn if v.turn in numbers else by_trace.get(v.turn_trace_id or "")
        if turn is None:
            overall.append(v)
        else:
            beside.setdefault(turn, []).append(v)
    main = [
        el("h1", "Conversation ", el("code", fmt.clip(item.session_id, 120))),
        _summary(item),
        el("h2", "Verdicts on the whole conversation"),
        forms_note(forms, reviews) if detail.results else None,
        el("div", [_verdict(v, review) for v in overall], class_="session-verdicts")
        if overall
        else el("p", "None.", class_="muted"),
        el("h2", "Transcript"),
        el("div", [_turn(t, beside.get(t.turn, []), review) for t in detail.turns], class_="transcript")
        if detail.turns
        else el("p", "No turns stored for this conversation."),
        el("p", el("a", "← conversations", href=link(SESSIONS, {"service": item.service}))),
    ]
    return shell(site, f"session {fmt.clip(item.session_id, ID_CHARS)}", main, active="sessions")
