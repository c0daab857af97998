"""The review page in a real headless Chromium (Debian's, driven by playwright; no browser download):
redirect to login, log in, filter, open a trace, the breakdown, log out; hostile trace text stays text."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.web.pages.layout import CSP
from tests.monitor.web.pages.conftest import Site

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 15_000
HINT = "`make system-deps` installs Debian's chromium; `pip install -e '.[dev]'` installs playwright"


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Chromium launched with ARGS; playwright's fresh profile (user-data-dir) lands in a short temporary directory
    (its TMPDIR): Chromium's singleton socket path must fit in 107 bytes, which a long test name in tmp_path
    does not."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"playwright is not installed: {HINT}")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: {HINT}")
    profiles = Path(tempfile.mkdtemp(prefix="chromium-"))
    monkeypatch.setenv("TMPDIR", str(profiles))  # read by playwright's driver when it makes the profile
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True, timeout=60_000)
        try:
            assert any(p.name.startswith("playwright_chromiumdev_profile") for p in profiles.iterdir())
            yield launched
        finally:
            launched.close()
    shutil.rmtree(profiles, ignore_errors=True)


def test_on_call_walkthrough(browser, review_site: Site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    facts = review_site.facts
    page = browser.new_page(viewport={"width": 1440, "height": 900}, color_scheme="dark")  # 3 a.m.
    page.set_default_timeout(TIMEOUT_MS)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    csp_violations: list[str] = []
    page.on("console", lambda m: csp_violations.append(m.text) if "Content Security Policy" in m.text else None)
    shot = 0

    def screenshot(name: str) -> None:
        nonlocal shot
        shot += 1
        page.screenshot(path=str(tmp_path / f"{shot:02d}-{name}.png"), full_page=True)

    # 1. no session: the browser lands on the login form, `next` kept
    page.goto(f"{review_site.base}/review")
    assert page.url == f"{review_site.base}/review/login?next=%2Freview"
    screenshot("login")
    page.fill("#token", "wrong")
    with page.expect_navigation():
        page.click("form.login button")
    assert "not the API token" in page.inner_text("main")
    page.fill("#token", review_site.token)
    with page.expect_navigation() as navigation:
        page.click("form.login button")
    response = navigation.value
    assert page.url == f"{review_site.base}/review" and response is not None and response.status == 200
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff" and response.headers["cache-control"] == "no-store"
    assert page.is_visible("text=log out")
    cookie = next(c for c in page.context.cookies() if c["name"] == "agent_monitor_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["value"] != review_site.token
    assert page.evaluate("document.cookie") == ""  # HttpOnly: out of reach of scripts

    # 2. the results list (the Failures page is /review): filter to one evaluator with the form
    page.click("nav a:text-is('results')")
    assert page.url == f"{review_site.base}/review/results"
    page.select_option("#f-evaluator", facts.evaluator)
    page.fill("#f-since", "24h")
    with page.expect_navigation():
        page.click("form.filters button")
    assert f"evaluator={facts.evaluator}" in page.url and "since=24h" in page.url
    rows = page.locator("table.results tbody tr")
    assert rows.count() >= 1
    for i in range(rows.count()):
        assert rows.nth(i).locator("td").nth(1).inner_text() == facts.evaluator
    padding = page.locator("th").first.evaluate("e => getComputedStyle(e).position")
    assert padding == "sticky"  # the stylesheet loaded under style-src 'self'
    screenshot("results")

    # 3. open the failing trace from its row
    row = page.locator("table.results tbody tr", has=page.locator(f'a[href^="/review/traces/{facts.failing_trace}"]'))
    with page.expect_navigation() as navigation:
        row.first.locator("td.id a").click()
    assert navigation.value is not None and navigation.value.headers["content-security-policy"] == CSP
    assert page.url.startswith(f"{review_site.base}/review/traces/{facts.failing_trace}")
    title = page.title()
    verdicts = page.locator("table.verdicts tbody tr")
    assert facts.explanation in page.locator("table.verdicts").inner_text()
    assert verdicts.first.get_attribute("class") == "row-fail"  # failing first
    for name in (facts.evaluator, *facts.other_evaluators):
        assert page.locator("table.verdicts td", has_text=name).count() >= 1
    steps = page.locator("table.steps tbody tr")
    assert [
        steps.nth(i).locator("td.step").inner_text().split(" ", 1)[1].strip() for i in range(steps.count())
    ] == list(facts.step_names)
    indents = [float(steps.nth(i).locator("td.step").evaluate("e => parseFloat(getComputedStyle(e).paddingLeft)"))
               for i in range(steps.count())]  # fmt: skip
    if facts.step_depths is None:
        assert indents[0] < indents[1] < indents[2]  # agent → LLM call → tool call
    else:  # indentation follows the stored depth: deeper steps further right, siblings aligned
        assert len(indents) == len(facts.step_depths)
        for (d1, i1), (d2, i2) in zip(zip(facts.step_depths, indents), zip(facts.step_depths[1:], indents[1:])):
            assert (i1 < i2) if d1 < d2 else (i1 > i2) if d1 > d2 else (i1 == i2)
    error_row = page.locator("table.steps tr.step-error")
    assert error_row.count() == 1 and facts.error_step in error_row.inner_text()
    ui = page.locator("a.trace-ui")
    assert ui.get_attribute("href") == review_site.trace_url_template.replace("{trace_id}", facts.failing_trace)
    assert ui.inner_text().startswith("open in trace UI")

    # 4. hostile text is shown as text, never run
    assert page.get_by_text(facts.payload, exact=False).first.is_visible()
    assert page.locator("img").count() == 0 and page.locator("main script").count() == 0
    time.sleep(0.3)  # an onerror or script would have fired by now
    assert page.title() == title and "pwned" not in title
    assert dialogs == [] and csp_violations == []
    screenshot("trace")

    # 5. the breakdown, and from a row back to its results
    with page.expect_navigation():
        page.click("header nav >> text=breakdown")
    page.select_option("#f-by", "service")
    page.fill("#f-since", "7d")
    with page.expect_navigation():
        page.click("form.filters button")
    groups = page.locator("table.breakdown tbody tr")
    assert groups.count() >= 1 and page.locator("table.breakdown .bar").count() == groups.count()
    screenshot("breakdown")
    value = groups.first.locator("td a").inner_text()
    with page.expect_navigation():
        groups.first.locator("td a").click()
    assert "service=" in page.url and page.locator("#f-service").input_value() == value

    # 6. log out: the session is gone
    with page.expect_navigation():
        page.click("text=log out")
    assert page.url.startswith(f"{review_site.base}/review/login")
    page.goto(f"{review_site.base}/review/breakdown")
    assert page.url.startswith(f"{review_site.base}/review/login?next=")
    assert dialogs == [] and csp_violations == []
    assert len(list(tmp_path.glob("*.png"))) == 4
    assert time.monotonic() - started < 60
