"""The "What's different" panel served by the metrics port with a stand-in explainer: on the Failures page (its
evaluator's failures over the page's filter; without an evaluator it asks for one), on a signature page, full
width on /review/explain, and linked from each change of the Changes page; hostile values stay text, and an
explainer that is missing or fails is a message in a page that still renders."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.config.drift import DriftConfig
from monitor.explain.model import ExplainQuery
from monitor.review.api_params import BadRequest, Unavailable
from monitor.review.models import EvaluatorStatus
from monitor.web.app import build_api_app
from monitor.web.pages.layout import CSP
from tests.monitor.web.pages.test_changes_page import Parsed
from tests.support.change_reports import AS_OF, RECENT, sample_report
from tests.support.explanations import HOSTILE, SIGNATURE, StubExplainer, factor, sample_explanation, signature_item
from tests.support.fake_reader import FakeReader
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration

TOKEN = "explain-page-token"
COOKIE = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}
EVALUATOR = "tool_success_rate"
HEADLINE = "model=gemini-2.5-pro AND tool=convert_currency: 92 % of failures, 14× the rest"


def infos() -> list[EvaluatorStatus]:
    return [EvaluatorStatus(name=EVALUATOR, kind="", level="")]


@contextmanager
def site(explainer: StubExplainer | None, **options: Any) -> Iterator[str]:
    reader = FakeReader(signature_items=[signature_item()])
    app = build_api_app(
        lambda accept: (b"", "text/plain"),
        dict,
        TOKEN,
        reader=reader,
        evaluators_info=infos,
        explainer=explainer,
        **options,
    )
    with serve(app) as base:
        yield base


def page(base: str, path: str, **query: str) -> tuple[int, dict[str, str], Parsed, str]:
    status, headers, body = get(f"{base}{path}?{urlencode(query)}", COOKIE)
    return status, headers, Parsed(body), body


def text(parsed: Parsed) -> str:
    return " ".join(" ".join(parsed.text).split())


def test_failures_page_explains_the_chosen_evaluator() -> None:
    stub = StubExplainer()
    with site(stub) as base:
        status, headers, parsed, body = page(base, "/review", evaluator=EVALUATOR, service="checkout")
    assert status == 200 and headers["Content-Security-Policy"] == CSP
    (query,) = stub.queries
    assert (query.evaluator, query.service, query.signature) == (EVALUATOR, "checkout", None)
    assert query.until - query.since == 86400  # the page's range
    assert parsed.all("section", "explain")[0]["data-kind"] == "failures"
    words = text(parsed)
    assert HEADLINE in words
    assert (
        "100 traces in the failures of tool_success_rate against 900 in its passing traces; 42 tested at FDR 1 %."
        in words
    )
    assert len(parsed.all("tr")) >= 4 and "only here" in words and "2.5×" in words and "< 0.0001" in words
    assert body.index('id="whats-different"') < body.index('class="signatures"')  # above the signatures
    links = [a["href"] or "" for a in parsed.all("a") if (a["href"] or "").startswith("/review/results?")]
    by_value = {next(k for k in ("model", "service") if k in parse_qs(urlsplit(h).query)): h for h in links[:2]}
    model = parse_qs(urlsplit(by_value["model"]).query)
    assert model["model"] == ["gemini-2.5-pro"] and model["outcome"] == ["fail"] and model["evaluator"] == [EVALUATOR]
    assert model["service"] == ["checkout"] and model["since"] == [str(int(query.since))]
    service = parse_qs(urlsplit(by_value["service"]).query)
    assert service["service"] == ["checkout"]
    assert not [h for h in links if "tenant=" in h or "tool=" in h]  # no results filter for those: no link
    more = next(a["href"] for a in parsed.all("a") if a["href"] and a["href"].startswith("/review/explain"))
    assert more == f"/review/explain?evaluator={EVALUATOR}&service=checkout&since=1d"


def test_failures_page_without_an_evaluator_asks_for_one() -> None:
    stub = StubExplainer()
    with site(stub) as base:
        status, _, parsed, _ = page(base, "/review")
    assert status == 200 and stub.queries == []
    assert "Choose an evaluator to see what sets its failures apart" in text(parsed)


def test_signature_page_explains_the_signature_against_its_evaluator() -> None:
    stub = StubExplainer()
    with site(stub) as base:
        status, _, parsed, _ = page(base, f"/review/signatures/{SIGNATURE}", since="6h")
    assert status == 200
    (query,) = stub.queries
    assert (query.signature, query.evaluator) == (SIGNATURE, EVALUATOR)
    assert round(query.until - query.since) == 6 * 3600
    assert parsed.all("section", "explain")[0]["data-kind"] == "signature"
    assert "92 % of the signature's traces, 14× the rest" in text(parsed)
    more = next(a["href"] for a in parsed.all("a") if a["href"] and a["href"].startswith("/review/explain"))
    assert more == f"/review/explain?evaluator={EVALUATOR}&signature={SIGNATURE}&since=6h"


def test_standalone_page_full_width_with_the_api_parameters() -> None:
    stub = StubExplainer()
    with site(stub) as base:
        query = {"service": "checkout", "agent": "planner", "since": "1764768600", "until": "1764770400"}
        status, headers, parsed, body = page(base, "/review/explain", **query, reference_since="1764682200")
        assert status == 200 and headers["Content-Security-Policy"] == CSP
        assert parsed.all("h1") and "<h1>What&#x27;s different</h1>" in body and "<h2>" not in body
        assert parsed.all("section", "explain")[0]["data-kind"] == "drift"
        assert "92 % of the recent window, 14× the baseline" in text(parsed)
        hidden = {a["name"]: a["value"] for a in parsed.all("input") if a.get("type") == "hidden"}
        assert hidden == {"reference_since": "1764682200"}
        assert any(a["href"] and a["href"].startswith("/api/v1/explain?service=checkout") for a in parsed.all("a"))
        status, _, _, body = page(base, "/review/explain", evaluator=EVALUATOR)
        assert status == 200 and HEADLINE in " ".join(body.split())
        status, _, _, body = page(base, "/review/explain", since="whenever")
        assert status == 400 and "since: invalid time" in body
        status, _, _, body = page(base, "/review/explain", colour="red")
        assert status == 400 and "unknown parameter" in body
    drift = stub.queries[0]
    assert (drift.reference_since, drift.reference_until) == (1_764_682_200.0, 1_764_768_600.0)


def test_nothing_significant_and_the_explainers_note() -> None:
    empty = ExplainQuery(evaluator=EVALUATOR, since=0, until=1)
    nothing = sample_explanation(empty).model_copy(update={"factors": []})
    with site(StubExplainer(nothing)) as base:
        _, _, parsed, _ = page(base, "/review/explain", evaluator=EVALUATOR)
        assert "no value sets the failures apart (42 values tested at FDR 1 %)" in text(parsed)
    with site(StubExplainer(sample_explanation(empty, note="no failing trace in the range"))) as base:
        _, _, parsed, _ = page(base, "/review", evaluator=EVALUATOR)
        assert "no failing trace in the range" in text(parsed)


def test_hostile_dimension_values_stay_text() -> None:
    query = ExplainQuery(evaluator=HOSTILE, since=0, until=1)
    answer = sample_explanation(query, factor([("model", HOSTILE), (HOSTILE, HOSTILE)], 0.9, 0.1, 9.0, 1e-5))
    with site(StubExplainer(answer)) as base:
        for path, params in (("/review/explain", {"evaluator": HOSTILE}), ("/review", {"evaluator": HOSTILE})):
            status, _, parsed, body = page(base, path, **params)
            assert status == 200 and "<script>" not in body, path
            assert not [t for t, _ in parsed.tags if t == "script"]
            assert not [name for _, attrs in parsed.tags for name in attrs if name.startswith("on")]
            assert f"model = {HOSTILE}" in text(parsed)
            hrefs = [a["href"] or "" for a in parsed.all("a")]
            assert all("<" not in h and '"' not in h for h in hrefs)
            assert any(parse_qs(urlsplit(h).query).get("model") == [HOSTILE] for h in hrefs)


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (RuntimeError("numpy exploded"), "explain failed: RuntimeError: numpy exploded"),
        (Unavailable("review unavailable: database is locked"), "review unavailable: database is locked"),
        (BadRequest("evaluator: no such evaluator"), "evaluator: no such evaluator"),
    ],
)
def test_a_failing_explainer_is_a_message_in_a_page_that_renders(failure: Exception, message: str) -> None:
    with site(StubExplainer(failure)) as base:
        for path in ("/review", f"/review/signatures/{SIGNATURE}"):
            status, _, parsed, body = page(base, path, evaluator=EVALUATOR)
            assert status == 200 and message in text(parsed), path
            assert parsed.all("section", "explain") and parsed.all("h1") and "traces" in body
        status, _, parsed, _ = page(base, "/review/explain", evaluator=EVALUATOR)
        assert status in (400, 503) and message in text(parsed) and parsed.all("form", "filters")


def test_without_an_explainer_the_panels_say_so() -> None:
    with site(None) as base:
        status, _, parsed, _ = page(base, "/review", evaluator=EVALUATOR)
        assert status == 200
        assert "explain unavailable: explanations are off (explain.enabled: false)" in text(parsed)
        status, _, parsed, _ = page(base, "/review/explain")
        assert status == 503 and "explain unavailable" in text(parsed)
    with site(None, explain_unavailable="the result store is disabled") as base:
        _, _, parsed, _ = page(base, f"/review/signatures/{SIGNATURE}")
        assert "explain unavailable: the result store is disabled" in text(parsed)


def test_each_change_links_to_its_recent_window_explained() -> None:
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, TOKEN, changes=sample_report, drift=DriftConfig())
    with serve(app) as base:
        _, _, parsed, body = page(base, "/review/changes")
    links = [a["href"] for a in parsed.all("a", "explain")]
    assert len(links) == 3
    since = int(AS_OF - RECENT)
    assert links[1] == (
        f"/review/explain?service=checkout&agent=planner&since={since}&until={int(AS_OF)}"
        f"&reference_since={since - 86400}&reference_until={since}"
    )
    assert links[0] == (  # no agent: none sent
        f"/review/explain?service=search&since={since}&until={int(AS_OF)}"
        f"&reference_since={since - 86400}&reference_until={since}"
    )
    assert "(against the 1d before it)" in body
