"""A canary rollout on the review page in headless Chromium (test_browser.py's browser): filter by variant with
the form, open a candidate trace, follow the pairwise judge's link to its baseline partner, compare the variants
in the breakdown and land on one variant's failures. (A short test name: Chromium's socket lives under tmp_path,
and a Unix socket path has at most 107 characters.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from tests.monitor.web.pages.conftest import TOKEN
from tests.monitor.web.pages.sample import evaluator_infos
from tests.monitor.web.pages.test_browser import TIMEOUT_MS, browser  # noqa: F401  (the fixture)
from tests.monitor.web.pages.variant_sample import (
    BASELINE,
    BASELINE_TRACES,
    CANARY,
    CANARY_TRACES,
    PAIRED,
    canary_reader,
)
from tests.support.metrics_port import review_app, serve

pytestmark = pytest.mark.integration


@pytest.fixture
def site() -> Iterator[str]:
    with serve(review_app(canary_reader(), TOKEN, evaluator_infos)) as base:
        yield base


def test_variant_filter(browser, site: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.context.add_cookies([{"name": SESSION_COOKIE, "value": session_value(TOKEN), "url": site}])
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    def variants_and_traces() -> tuple[set[str], set[str]]:
        rows = page.locator("table.results tbody tr")
        variants = {rows.nth(i).locator("td.variant").inner_text() for i in range(rows.count())}
        links = page.locator("table.results td.id a")
        traces = {(links.nth(i).get_attribute("href") or "").split("/")[-1].split("#")[0] for i in range(links.count())}
        return variants, traces

    # every variant's results, then only the canary's, with the form
    page.goto(f"{site}/review?outcome=any")
    assert variants_and_traces()[0] == {BASELINE, CANARY, ""}
    page.fill("#f-variant", CANARY)
    with page.expect_navigation():
        page.click("form.filters button")
    assert f"variant={CANARY}" in page.url
    assert variants_and_traces() == ({CANARY}, set(CANARY_TRACES))
    assert page.locator("#f-variant").input_value() == CANARY
    with page.expect_navigation():  # a quick range keeps the filter
        page.click("p.ranges >> text=7d")
    assert f"variant={CANARY}" in page.url and variants_and_traces()[0] <= {CANARY}

    # the candidate trace, and one click to the baseline trace it was judged against
    page.goto(f"{site}/review/traces/{PAIRED}")
    assert CANARY in page.locator("dl.summary").inner_text()
    partner = page.locator("table.verdicts a.partner")
    assert partner.count() == 1 and BASELINE in page.locator("table.verdicts .pair").inner_text()
    with page.expect_navigation():
        partner.click()
    assert page.url == f"{site}/review/traces/{BASELINE_TRACES[1]}"
    assert BASELINE in page.locator("dl.summary").inner_text()

    # the breakdown by variant: the canary fails most; its row leads to its failures only
    page.goto(f"{site}/review/breakdown?evaluator=tool_success_rate&by=variant")
    groups = page.locator("table.breakdown tbody tr")
    assert [groups.nth(i).locator("td").first.inner_text() for i in range(groups.count())] == [
        CANARY,
        BASELINE,
        "(none)",
    ]
    with page.expect_navigation():
        groups.first.locator("td a").click()
    assert page.locator("#f-variant").input_value() == CANARY
    assert variants_and_traces() == ({CANARY}, set(CANARY_TRACES))
    assert page.locator("table.results tbody tr.row-fail").count() == 3
    assert dialogs == []
