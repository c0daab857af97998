"""The Changes page in headless Chromium (test_browser.py's browser): the drifted signals ranked by effect, a
chart per change, the kind filter, and a change's trace link landing on the results list with its filters."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.config.drift import DriftConfig
from monitor.web.app import build_api_app
from tests.monitor.web.pages.test_browser import TIMEOUT_MS, browser  # noqa: F401  (the fixture)
from tests.support.change_reports import AS_OF, RECENT, sample_report
from tests.support.fake_reader import FakeReader, item
from tests.support.threaded_server import serve

pytestmark = pytest.mark.integration

IN_WINDOW = [f"{n:032x}" for n in (1, 2, 3)]  # helpfulness failures of checkout/planner in the recent window


def _reader() -> FakeReader:
    ours = {"service": "checkout", "agent": "planner", "evaluator": "helpfulness"}
    items = [item(n, evaluated_at=AS_OF - 60 * n, **ours) for n in (1, 2, 3)]
    items.append(item(4, evaluated_at=AS_OF - RECENT - 600, **ours))  # before the window
    items.append(item(5, evaluated_at=AS_OF - 30, service="checkout", agent="planner"))  # another evaluator
    items.append(item(6, evaluated_at=AS_OF - 30, **{**ours, "service": "search"}))  # another service
    return FakeReader(items=items)


@pytest.fixture
def site() -> Iterator[str]:
    app = build_api_app(
        lambda accept: (b"", "text/plain"),
        dict,
        "changes-browser-token",
        reader=_reader(),
        changes=sample_report,
        drift=DriftConfig(),
    )
    with serve(app) as base:
        yield base


def test_changes_page(browser, site: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    cookie = session_value("changes-browser-token")
    page.context.add_cookies([{"name": SESSION_COOKIE, "value": cookie, "url": site}])
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)

    page.goto(f"{site}/review")
    with page.expect_navigation():
        page.click("header nav >> text=changes")
    assert page.url == f"{site}/review/changes"
    sections = page.locator("section.change")
    assert sections.count() == 3
    headings = [sections.nth(i).locator("h2").inner_text() for i in range(3)]
    assert ["latency" in headings[0], "pass_ratio[helpfulness]" in headings[1], "tool_success" in headings[2]] == [
        True,
        True,
        True,
    ]
    assert "worse" in headings[1] and "changed up" in headings[0]
    for i in range(3):  # a drawn chart per change: two dots, two intervals, laid out with a real size
        chart = sections.nth(i).locator("svg.change-chart")
        assert chart.count() == 1 and chart.locator("circle").count() == 2 and chart.locator("line.ci").count() == 2
        box = chart.bounding_box()
        assert box is not None and box["width"] >= 250 and box["height"] >= 40
    dot = sections.nth(2).locator("circle.recent")
    assert dot.evaluate("e => getComputedStyle(e).fill") != "rgb(0, 0, 0)"  # the stylesheet styles the SVG
    assert "0.97 → 0.89" in sections.nth(2).locator("p.change-summary").inner_text()

    page.select_option("#f-kind", "behaviour")  # the filter form
    with page.expect_navigation():
        page.click("form.filters button")
    assert "kind=behaviour" in page.url and page.locator("section.change").count() == 1
    page.go_back()

    with page.expect_navigation():  # the pass ratio's failing traces over the recent window
        page.locator("#change-2 a.traces").click()
    url = urlsplit(page.url)
    assert url.path == "/review/results"
    assert parse_qs(url.query) == {
        "service": ["checkout"],
        "agent": ["planner"],
        "evaluator": ["helpfulness"],
        "outcome": ["fail"],
        "since": [str(int(AS_OF - RECENT))],
        "until": [str(int(AS_OF))],
    }
    assert page.locator("#f-service").input_value() == "checkout"
    assert page.locator("#f-agent").input_value() == "planner"
    assert page.locator("#f-evaluator").input_value() == "helpfulness"
    assert page.locator("#f-outcome").input_value() == "fail"
    links = page.locator("table.results td.id a")
    shown = {(links.nth(i).get_attribute("href") or "").split("/")[-1].split("#")[0] for i in range(links.count())}
    assert shown == set(IN_WINDOW)
    assert violations == []
