"""/api/v1/explain on a real socket with a stand-in explainer: the query it is handed (defaults, times, the
reference range), the answer as JSON, each bad parameter a 400 naming it, 503 without an explainer, the
explainer's own refusals, auth as the rest of /api/v1, and the OpenAPI document describing what is served."""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from monitor.explain.model import ExplainQuery
from monitor.review.api_params import BadRequest, Unavailable
from monitor.web.app import build_api_app
from monitor.web.explain_info import EXPLAIN_PARAMS
from monitor.web.openapi import PREFIX, openapi_document
from tests.monitor.web.test_openapi import conforms
from tests.support.explanations import HOSTILE, SIGNATURE, StubExplainer, factor, sample_explanation
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration

TOKEN = "explain-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def api(explainer: StubExplainer | None, **options: Any) -> Iterator[str]:
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, TOKEN, explainer=explainer, **options)
    with serve(app) as base:
        yield base


def explain(base: str, headers: dict[str, str] | None = BEARER, **query: str) -> tuple[int, dict[str, str], Any]:
    suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
    return get(f"{base}{PREFIX}/explain{suffix}", headers)


def test_defaults_the_answer_and_a_worker_thread() -> None:
    stub = StubExplainer()
    with api(stub) as base:
        before = time.time()
        status, headers, body = explain(base, evaluator="tool_success_rate")
        after = time.time()
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    (query,) = stub.queries
    assert before - 1 <= query.until <= after + 1 and query.since == query.until - 3600
    assert (query.evaluator, query.signature, query.service, query.reference_since) == (
        "tool_success_rate",
        None,
        None,
        None,
    )
    assert stub.threads[0] != "review-test-server"  # not the event loop's thread
    assert body["kind"] == "failures" and body["query"]["evaluator"] == "tool_success_rate"
    assert (body["slice_traces"], body["reference_traces"], body["tested"], body["fdr"]) == (100, 900, 42, 0.01)
    top = body["factors"][0]
    assert top["values"] == [
        {"dimension": "model", "value": "gemini-2.5-pro"},
        {"dimension": "tool", "value": "convert_currency"},
    ]
    assert (top["slice_share"], top["lift"], top["q_value"], top["coverage"]) == (0.92, 14.0, 1e-8, 0.92)
    assert body["factors"][1]["lift"] is None and body["truncated"] is False and body["note"] is None


def test_every_parameter_reaches_the_query() -> None:
    stub = StubExplainer()
    with api(stub) as base:
        status, _, body = explain(
            base,
            evaluator="helpfulness",
            signature=SIGNATURE.upper(),
            service="checkout",
            agent="planner",
            variant="1.5.0",
            since="2025-12-03T13:00:00Z",
            until="1764770400",
        )
        assert status == 200 and body["kind"] == "signature"
        drift = explain(base, service="checkout", since="1764768600", until="1764770400", reference_since="1764682200")
        assert drift[0] == 200 and drift[2]["kind"] == "drift"
        both = explain(base, since="1764768600", reference_since="1764600000", reference_until="1764680000")
        assert both[0] == 200
    first, second, third = stub.queries
    assert first.signature == SIGNATURE and (first.service, first.agent, first.variant) == (
        "checkout",
        "planner",
        "1.5.0",
    )
    assert (first.since, first.until) == (1_764_766_800.0, 1_764_770_400.0)
    assert (second.reference_since, second.reference_until) == (1_764_682_200.0, 1_764_768_600.0)  # until: since
    assert (third.reference_since, third.reference_until) == (1_764_600_000.0, 1_764_680_000.0)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"bogus": "1"}, "unknown parameter 'bogus'"),
        ({"since": "yesterday-ish"}, "since: invalid time"),
        ({"until": "-5"}, "until: Unix seconds must be"),
        ({"since": "1764770400", "until": "1764770400"}, "since must be before until"),
        ({"signature": "xyz"}, "signature must be 16 hex characters, got 'xyz'"),
        ({"reference_until": "1764680000"}, "reference_until: give reference_since with it"),
        ({"since": "1764770000", "reference_since": "1764770000"}, "reference_since must be before reference_until"),
        ({"reference_since": "soon"}, "reference_since: invalid time"),
        ({"evaluator": "x" * 300}, "evaluator: longer than 256 characters"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(query: dict[str, str], message: str) -> None:
    stub = StubExplainer()
    with api(stub) as base:
        status, _, body = explain(base, **query)
    assert status == 400 and message in body["error"], body
    assert stub.queries == []


def test_repeated_parameter_and_explainer_refusals() -> None:
    with api(StubExplainer()) as base:
        status, _, body = get(f"{base}{PREFIX}/explain?evaluator=a&evaluator=b", BEARER)
        assert status == 400 and body["error"] == "parameter 'evaluator' given more than once"
    with api(StubExplainer(BadRequest("evaluator: no such evaluator 'nope'"))) as base:
        assert explain(base, evaluator="nope")[:3:2] == (400, {"error": "evaluator: no such evaluator 'nope'"})
    with api(StubExplainer(Unavailable("review unavailable: OperationalError: database is locked"))) as base:
        status, _, body = explain(base, evaluator="x")
        assert status == 503 and body["error"].startswith("review unavailable: ")
    with api(StubExplainer(RuntimeError("numpy exploded at /secret/path"))) as base:
        status, _, body = explain(base, evaluator="x")
        assert status == 500 and body == {"error": "internal error (see the daemon's log)"}


def test_without_an_explainer_503_with_the_reason() -> None:
    with api(None) as base:
        status, _, body = explain(base, evaluator="x")
        assert status == 503
        assert body["error"] == (
            "explain unavailable: explanations are off (explain.enabled: false) or the result store is disabled"
        )
        assert explain(base, since="garbage")[0] == 400  # the query is still checked first
    with api(None, explain_unavailable="the result store is disabled (store.enabled: false)") as base:
        status, _, body = explain(base)
        assert (status, body["error"]) == (
            503,
            "explain unavailable: the result store is disabled (store.enabled: false)",
        )


def test_auth_and_hostile_values_kept_exact_in_json() -> None:
    query = ExplainQuery(evaluator=HOSTILE, since=0, until=1)
    stub = StubExplainer(sample_explanation(query, factor([("model", HOSTILE)], 0.9, 0.1, 9.0, 1e-5)))
    with api(stub) as base:
        assert explain(base, headers=None, evaluator="x")[0] == 401
        assert explain(base, headers={"Authorization": "Bearer wrong"}, evaluator="x")[0] == 401
        status, headers, body = explain(base, evaluator="x")
    assert status == 200 and body["factors"][0]["values"][0]["value"] == HOSTILE
    assert headers["Cache-Control"] == "no-store" and headers["X-Content-Type-Options"] == "nosniff"


def test_the_openapi_document_describes_it() -> None:
    document = openapi_document()
    operation = document["paths"][f"{PREFIX}/explain"]["get"]
    assert operation["operationId"] == "explainSlice"
    assert (
        [p["name"] for p in operation["parameters"]]
        == [p.name for p in EXPLAIN_PARAMS]
        == [
            "evaluator",
            "signature",
            "service",
            "agent",
            "variant",
            "since",
            "until",
            "reference_since",
            "reference_until",
        ]
    )
    assert set(operation["responses"]) == {"200", "400", "401", "404", "503"}
    assert "explain unavailable" in operation["responses"]["503"]["description"]
    assert document["components"]["schemas"]["Factor"]["properties"]["lift"]["anyOf"][1] == {"type": "null"}
    with api(StubExplainer()) as base:
        for query, code in (({"evaluator": "x"}, "200"), ({"since": "x"}, "400")):
            status, _, body = explain(base, **query)
            assert str(status) == code
            schema = operation["responses"][code]["content"]["application/json"]["schema"]
            assert conforms(document, schema, body) == [], query
    with api(None) as base:
        status, _, body = explain(base)
        schema = operation["responses"]["503"]["content"]["application/json"]["schema"]
        assert status == 503 and conforms(document, schema, body) == []
