"""Reviewing on the conversation page: each session-level verdict (on the whole conversation, or beside the turn it
names) shows its review in force and, for a logged-in review session, the review form naming its result's row
(the last turn's trace, level "session", no span) that leads back to the verdict; a bearer-token read or a port
without a token shows the note and no form. Over a real SQLite store, the real app and `ReviewWriter`."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import urlencode

import pytest

from monitor.auth import SESSION_COOKIE
from monitor.web.pages.review_forms import LOGIN_NOTE, TOKEN_NOTE
from tests.monitor.review.test_session_reader import tid
from tests.monitor.web.pages.review_store import (
    TOKEN,
    ReviewSite,
    csrf_of,
    log_in,
    page,
    session_review_server,
)
from tests.support.metrics_port import fetch, post_form

pytestmark = pytest.mark.integration  # each test starts a process or a server

CONVERSATION = "/review/sessions/conv-rephrase"
FORM = re.compile(r'<form[^>]*action="/review/reviews"[^>]*>(.*?)</form>', re.S)
HIDDEN = re.compile(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"')


def forms_of(body: str) -> list[dict[str, str]]:
    """Each review form's hidden fields, with `at`: where the form starts in the page."""
    return [
        {**{name: unescape(value) for name, value in HIDDEN.findall(m.group(1))}, "at": str(m.start())}
        for m in FORM.finditer(body)
    ]


@pytest.fixture
def site(tmp_path: Path):  # type: ignore[no-untyped-def]
    with session_review_server(tmp_path) as served:
        yield served


@pytest.fixture
def session(site: ReviewSite) -> str:
    return f"{SESSION_COOKIE}={log_in(site.base)}"


def test_a_review_session_gets_a_form_per_session_verdict_naming_its_row(site: ReviewSite, session: str) -> None:
    answer = page(site.base, CONVERSATION, session)
    assert answer.status == 200
    body = answer.body
    csrf = csrf_of(body)
    forms = {f["evaluator"]: f for f in forms_of(body)}
    assert set(forms) == {"conversation_completion", "user_rephrase", "human_handoff_request"}
    for evaluator, form in forms.items():
        assert form["csrf"] == csrf
        assert (form["trace_id"], form["level"], form["span_id"]) == (tid(3), "session", "")  # the last turn's
        assert form["next"] == f"{CONVERSATION}#verdict-{evaluator}"
        assert f'id="verdict-{evaluator}"' in body
    # the whole conversation's at the top, the others beside the turns they name
    transcript, turn2, turn3 = (body.index(mark) for mark in ("<h2>Transcript", 'id="turn-2"', 'id="turn-3"'))
    assert int(forms["conversation_completion"]["at"]) < transcript
    assert turn2 < int(forms["user_rephrase"]["at"]) < turn3 < int(forms["human_handoff_request"]["at"])
    assert body.count("not reviewed") == 3 and LOGIN_NOTE not in unescape(body)


def test_a_review_posted_from_the_page_lands_back_at_the_verdict_and_is_in_force(
    site: ReviewSite, session: str
) -> None:
    body = page(site.base, CONVERSATION, session).body
    form = next(f for f in forms_of(body) if f["evaluator"] == "user_rephrase")
    fields = {k: v for k, v in form.items() if k != "at"}
    fields |= {"agreement": "disagree", "reviewer": "ann", "corrected_label": "clarification", "note": "fair ask"}
    answer = post_form(site.base, "/review/reviews", urlencode(fields), {"Cookie": session})
    assert answer.status == 303, answer.body
    assert answer.headers["Location"] == f"{CONVERSATION}#verdict-user_rephrase"
    assert site.reviews() == [("user_rephrase", "disagree", "ann", "fair ask", 0)]

    after = unescape(page(site.base, CONVERSATION, session).body)
    turn2, turn3 = after.index('id="turn-2"'), after.index('id="turn-3"')
    aside = after[turn2:turn3]
    assert "false alarm · ann" in aside and "label → clarification" in aside and "fair ask" in aside
    assert "change review" in aside and after.count("not reviewed") == 2

    # changed: the earlier review goes to the history, on demand
    fields |= {"agreement": "agree", "note": "no, it was a rephrase", "corrected_label": ""}
    assert post_form(site.base, "/review/reviews", urlencode(fields), {"Cookie": session}).status == 303
    aside = unescape(page(site.base, CONVERSATION, session).body)
    aside = aside[aside.index('id="turn-2"') : aside.index('id="turn-3"')]
    assert "confirmed failure · ann" in aside and "history (1 earlier)" in aside and "fair ask" in aside


def test_a_bearer_read_shows_the_review_in_force_and_the_note_but_no_form(site: ReviewSite, session: str) -> None:
    form = next(f for f in forms_of(page(site.base, CONVERSATION, session).body) if f["level"] == "session")
    fields = {k: v for k, v in form.items() if k != "at"} | {"agreement": "agree", "reviewer": "bob"}
    assert form["evaluator"] == "conversation_completion"
    assert post_form(site.base, "/review/reviews", urlencode(fields), {"Cookie": session}).status == 303
    body = fetch(site.base, CONVERSATION, {"Authorization": f"Bearer {TOKEN}"}).body
    assert forms_of(body) == [] and 'name="csrf"' not in body
    text = unescape(body)
    assert LOGIN_NOTE in text and "confirmed pass · bob" in text
    assert text.index("confirmed pass · bob") < text.index("<h2>Transcript")  # the whole conversation's verdict


def test_without_a_token_the_conversation_page_has_the_note_and_no_form(tmp_path: Path) -> None:
    with session_review_server(tmp_path, token=None) as site:
        answer = page(site.base, CONVERSATION)  # loopback reads without a token
        assert answer.status == 200 and "user_rephrase" in answer.body
        assert TOKEN_NOTE in answer.body and forms_of(answer.body) == [] and 'name="csrf"' not in answer.body
        assert "not reviewed" not in answer.body  # nothing reviewed and nothing to review with: no review shown
