"""/review/changes served by the metrics port: ranked changes with their summaries, charts and trace links, the
filters, the empty states, the navigation link, and hostile labels that stay text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.config.drift import DriftConfig
from monitor.detection.model import DriftReport
from monitor.web.app import build_api_app
from monitor.web.pages.layout import CSP
from tests.support.change_reports import HOSTILE, sample_report
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration

TOKEN = "changes-page-token"
COOKIE = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}


class Parsed(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str, cls: str | None = None) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split())]


@contextmanager
def site(changes: Callable[[], DriftReport | None] | None, drift: DriftConfig | None = None) -> Iterator[str]:
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, TOKEN, changes=changes, drift=drift)
    with serve(app) as base:
        yield base


def page(base: str, **query: str) -> tuple[int, dict[str, str], Parsed, str]:
    status, headers, body = get(f"{base}/review/changes?{urlencode(query)}", COOKIE)
    return status, headers, Parsed(body), body


def test_changes_ranked_with_summary_chart_and_links() -> None:
    with site(sample_report) as base:
        status, headers, parsed, body = page(base)
    assert status == 200 and headers["Content-Security-Policy"] == CSP
    sections = parsed.all("section", "change")
    assert [s["id"] for s in sections] == ["change-1", "change-2", "change-3"]
    assert body.index("latency") < body.index("pass_ratio[helpfulness]") < body.index("tool_success 0.97")
    assert len(parsed.all("svg", "change-chart")) == 3
    assert len(parsed.all("circle")) == 6 and len(parsed.all("line", "ci")) == 6  # a dot and an interval a window
    assert parsed.all("svg")[0]["viewbox"] == "0 0 300 56"
    links = [a["href"] for a in parsed.all("a", "traces")]
    assert links[1] == (
        "/review/results?service=checkout&agent=planner&evaluator=helpfulness&outcome=fail"
        "&since=1764768600&until=1764770400"
    )
    assert "tool_success 0.97 → 0.89 against the same hours of the previous days, since 13:45 UTC" in body
    assert "(n = 1000)" in body and "-8.0 pts" in body and "+50%" in body and "v2" in body
    nav = [a["href"] for a in parsed.all("a") if a.get("class") == "active"]
    assert nav == ["/review/changes"]


def test_filters_and_every_tested_signal() -> None:
    with site(sample_report) as base:
        _, _, parsed, body = page(base, service="checkout", kind="quality")
        assert len(parsed.all("section", "change")) == 2 and "latency" not in body
        assert parsed.all("input")[0]["value"] == "checkout"
        _, _, parsed, body = page(base, all="true")
        assert len(parsed.all("section", "change")) == 5 and "no significant change" in body and "better" in body
        _, _, parsed, body = page(base, service="nowhere")
        assert "No change matches" in body and parsed.all("a", None)[-1]["href"].endswith("all=true")
        status, _, _, body = page(base, kind="mood")
        assert status == 400 and "kind" in body


def test_empty_states_say_what_drift_watches_and_when() -> None:
    drift = DriftConfig(recent=1800, interval=120)
    with site(lambda: None, drift) as base:
        status, _, _, body = page(base)
    assert status == 200 and "No report yet: the first one is made 2m after the daemon starts" in body
    assert "tool calls per trace" in body and "The last 30m is tested" in body
    with site(None) as base:
        status, _, _, body = page(base)
        assert status == 200 and "Drift detection is off in this process" in body
        status, _, body = get(f"{base}/review/changes", {"Accept": "text/html"})  # no session: the login form
    assert status == 200 and "<title>log in · agent-monitor</title>" in body


def test_hostile_labels_stay_text() -> None:
    report = sample_report(service=HOSTILE, agent=HOSTILE, subject=HOSTILE)
    with site(lambda: report) as base:
        status, _, parsed, body = page(base, all="true", agent=HOSTILE)
    assert status == 200 and "<script>" not in body
    assert not [t for t, _ in parsed.tags if t == "script"]
    assert not [name for _, attrs in parsed.tags for name in attrs if name.startswith("on")]
    assert HOSTILE.split("\x1b")[0] in "".join(parsed.text)
    assert parsed.all("input")[1]["value"] == HOSTILE
    for href in (a["href"] for a in parsed.all("a", "traces")):
        assert href is not None and href.startswith("/review/results?") and "<" not in href
