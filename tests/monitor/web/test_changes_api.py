"""/api/v1/changes on a real socket: drift's latest report, ranked by |effect|, filtered; auth as the rest of
/api/v1; 503 while drift is off or before the first report; hostile labels kept exact in JSON; the OpenAPI
document describes what is served."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.config.drift import DriftConfig
from monitor.detection.model import DriftReport
from monitor.web.app import build_api_app
from monitor.web.openapi import PREFIX, openapi_document
from tests.monitor.web.test_openapi import conforms
from tests.support.change_reports import AS_OF, HOSTILE, RECENT, sample_report
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration

TOKEN = "changes-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
DRIFT = DriftConfig(baseline=7 * 86400.0, trailing=86400.0, interval=60.0)


@contextmanager
def api(changes: Callable[[], DriftReport | None] | None, token: str | None = TOKEN) -> Iterator[str]:
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, token, changes=changes, drift=DRIFT)
    with serve(app) as base:
        yield base


def changes(base: str, **query: str) -> tuple[int, dict[str, str], Any]:
    suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
    return get(f"{base}{PREFIX}/changes{suffix}", BEARER)


def test_active_changes_ranked_by_effect_with_their_figures() -> None:
    with api(sample_report) as base:
        status, headers, body = changes(base)
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert (body["as_of"], body["recent_seconds"], body["recent_since"]) == (AS_OF, RECENT, AS_OF - RECENT)
    assert (body["tested"], body["matched"], body["all"], body["complete"]) == (5, 3, False, True)
    assert [(i["service"], i["signal"]) for i in body["items"]] == [
        ("search", "latency"),
        ("checkout", "pass_ratio"),
        ("checkout", "tool_success"),
    ]
    latency, passing, tools = body["items"]
    assert latency["kind"] == "behaviour" and latency["active"] and latency["worse"] is None
    assert latency["description"] == "a trace's duration" and latency["unit"] == "seconds"
    assert latency["recent_variants"] == ["v2"] and latency["direction"] == "up"
    assert latency["baseline"]["mean"] == pytest.approx(1.2)
    assert latency["baseline"]["low"] < 1.2 < latency["baseline"]["high"]
    assert passing["subject"] == "helpfulness" and passing["effect"] == -0.15 and passing["q_value"] == 1e-6
    assert tools["baseline"] == {
        "mean": 0.97,
        "n": 1000,
        "low": pytest.approx(0.97 - 1.96 * (0.97 * 0.03 / 1000) ** 0.5, abs=1e-4),
        "high": pytest.approx(0.97 + 1.96 * (0.97 * 0.03 / 1000) ** 0.5, abs=1e-4),
        "kind": "same_hours",
    }
    assert tools["recent"]["mean"] == 0.89 and tools["recent"]["n"] == 300
    assert tools["summary"] == "tool_success 0.97 → 0.89 against the same hours of the last 7 days, since 13:45 UTC"
    assert latency["summary"].endswith("since 2025-12-02 13:50 UTC, with new version v2")  # a day earlier: dated
    window = f"since={int(AS_OF - RECENT)}&until={int(AS_OF)}"
    assert tools["traces_url"] == f"/review/results?service=checkout&agent=planner&outcome=any&{window}"
    assert passing["traces_url"] == (
        f"/review/results?service=checkout&agent=planner&evaluator=helpfulness&outcome=fail&{window}"
    )
    assert latency["traces_url"] == f"/review/results?service=search&outcome=any&{window}"  # no agent: none sent


def test_filters_all_and_limit() -> None:
    def signals(**query: str) -> list[str]:
        status, _, body = changes(base, **query)
        assert status == 200, body
        return [i["signal"] for i in body["items"]]

    with api(sample_report) as base:
        assert signals(service="checkout") == ["pass_ratio", "tool_success"]
        assert signals(agent="planner", kind="quality") == ["pass_ratio", "tool_success"]
        assert signals(kind="behaviour") == ["latency"]
        assert signals(service="nowhere") == []
        every = signals(all="true")  # every tested signal: the improvement and the unchanged one too, untested not
        assert every == ["latency", "pass_ratio", "tool_success", "error_rate", "tokens"]
        assert signals(all="true", service="search") == ["latency", "tokens"]
        assert signals(all="false", limit="1") == ["latency"]
        status, _, body = changes(base, limit="2")
        assert body["matched"] == 3 and len(body["items"]) == 2
        for bad, named in (
            ({"kind": "mood"}, "kind"),
            ({"all": "maybe"}, "all"),
            ({"limit": "0"}, "limit"),
            ({"limit": "x"}, "limit"),
            ({"since": "1h"}, "unknown parameter"),
        ):
            status, _, body = changes(base, **bad)
            assert status == 400 and named in body["error"], bad


def test_auth_as_every_api_path() -> None:
    with api(sample_report) as base:
        status, headers, body = get(f"{base}{PREFIX}/changes")
        assert status == 401 and "error" in body and headers["Content-Type"].startswith("application/json")
        assert get(f"{base}{PREFIX}/changes", {"Authorization": "Bearer wrong"})[0] == 401
        assert get(f"{base}{PREFIX}/changes", {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"})[0] == 200
        assert get(f"{base}{PREFIX}/changes", BEARER)[1]["Cache-Control"] == "no-store"
    with api(sample_report, token=None) as base:  # no token: loopback clients read, as the rest of the API
        assert get(f"{base}{PREFIX}/changes")[0] == 200


def test_disabled_and_no_report_yet_are_503_with_the_reason() -> None:
    with api(None) as base:
        status, headers, body = changes(base)
        assert status == 503 and body["error"].startswith("drift unavailable: drift detection is disabled")
        assert changes(base, kind="mood")[0] == 400  # a bad query is still a bad query
    with api(lambda: None) as base:
        status, headers, body = changes(base)
        assert status == 503 and body["error"].startswith("drift unavailable: no report yet")
        assert "1m" in body["error"] and headers["Retry-After"] == "60"

    def broken() -> DriftReport | None:
        raise RuntimeError("secret detail")

    with api(broken) as base:
        status, _, body = changes(base)
        assert status == 500 and "secret" not in body["error"]


def test_hostile_labels_come_back_exactly_as_json() -> None:
    report = sample_report(service=HOSTILE, agent=HOSTILE + "\u202e", subject="\x00" + HOSTILE)
    with api(lambda: report) as base:
        status, headers, body = changes(base, service=HOSTILE)
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert {i["service"] for i in body["items"]} == {HOSTILE}
    passing = next(i for i in body["items"] if i["signal"] == "pass_ratio")
    assert passing["agent"] == HOSTILE + "\u202e" and passing["subject"] == "\x00" + HOSTILE
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(passing["traces_url"]).query)
    assert query["service"] == [HOSTILE] and query["evaluator"] == ["\x00" + HOSTILE]  # encoded, not spliced
    assert passing["traces_url"].startswith("/review/results?") and "<" not in passing["traces_url"]


def test_the_openapi_document_lists_it_and_answers_conform() -> None:
    document = openapi_document()
    operation = document["paths"][f"{PREFIX}/changes"]["get"]
    assert [p["name"] for p in operation["parameters"]] == ["service", "agent", "kind", "all", "limit"]
    assert set(operation["responses"]) == {"200", "400", "401", "404", "503"}
    assert "drift unavailable" in operation["responses"]["503"]["description"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    with api(sample_report) as base:
        for query in ({}, {"all": "true"}):
            assert conforms(document, schema, changes(base, **query)[2]) == []
    with api(None) as base:
        assert conforms(document, {"$ref": "#/components/schemas/ApiError"}, changes(base)[2]) == []


def test_intervals_and_wording() -> None:
    from monitor.detection.model import BaselineKind, Moments, Statistic
    from monitor.web.changes import describe, duration, interval
    from tests.support.change_reports import state

    values = [1.0, 2.0, 3.0, 4.0]  # mean 2.5, sd sqrt(5/3)
    moments = Moments(n=4, total=sum(values), squares=sum(v * v for v in values))
    low, high = interval(moments, Statistic.MEAN)
    half = 1.959963984540054 * (5 / 3) ** 0.5 / 2
    assert (low, high) == (pytest.approx(2.5 - half), pytest.approx(2.5 + half))
    assert interval(Moments(n=1, total=3.0, squares=9.0), Statistic.MEAN) == (3.0, 3.0)
    assert interval(Moments(), Statistic.RATIO) == (None, None)
    assert interval(Moments(n=10, total=10, squares=10), Statistic.RATIO) == (1.0, 1.0)  # p = 1: no width
    assert [duration(s) for s in (1800, 3600, 86400 * 7, 90, 5400)] == ["30m", "1h", "7d", "1m30s", "1h30m"]
    trailing = state(
        "s", "", "cost", baseline_kind=BaselineKind.TRAILING, baseline=Moments(n=40, total=0.4, squares=0.01),
        recent=Moments(n=40, total=0.8, squares=0.02), significant=True, effect=1.0, since=AS_OF - 60,
    )  # fmt: skip
    expected = "cost mean 0.01 → 0.02 USD (+100 %) against the trailing {}, since 13:59 UTC"
    assert describe(trailing, AS_OF, DRIFT) == expected.format("24 h")
    assert describe(trailing, AS_OF) == expected.format("window")


def test_short_latencies_read_in_milliseconds() -> None:
    from monitor.web.changes import value_text

    assert [value_text(v, "seconds") for v in (2.345, 0.1, 0.005, 0.00020286, 0.0)] == [
        "2.35 s", "0.1 s", "5 ms", "0.203 ms", "0 s",
    ]  # fmt: skip
