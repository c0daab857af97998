"""The review pages with variants: the variant filter reaches the reader and every link the page builds keeps it,
the variant column and trace summary, the breakdown by variant, the pairwise judge's partner link."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from monitor.review.models import ResultFilter
from monitor.web.pages.trace import partner
from tests.monitor.web.pages.sample import evaluator_infos
from tests.monitor.web.pages.test_pages import hrefs, rows
from tests.monitor.web.pages.variant_sample import (
    BASELINE,
    BASELINE_TRACES,
    CANARY,
    CANARY_TRACES,
    PAIRED,
    PAIRWISE,
    canary_reader,
)
from tests.support.fake_reader import FakeReader, item, trace_detail
from tests.support.metrics_port import fetch, review_app, serve


@pytest.fixture
def reader() -> FakeReader:
    return canary_reader()


@pytest.fixture
def base(reader: FakeReader) -> Iterator[str]:
    with serve(review_app(reader, None, evaluator_infos)) as url:
        yield url


def variant_cells(body: str) -> list[str]:
    return [unescape(v) for v in re.findall(r'<td class="variant">([^<]*)</td>', body)]


def query_of(href: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(href).query)


@pytest.mark.integration
def test_the_variant_filter_reaches_the_reader_and_shows_only_that_variant(base: str, reader: FakeReader) -> None:
    answer = fetch(base, f"/review/results?variant={CANARY}&outcome=any")
    assert answer.status == 200
    assert reader.calls[-1][1][0] == ResultFilter(variant=CANARY)
    assert f'name="variant" id="f-variant" value="{CANARY}"' in answer.body
    found = rows(answer.body)
    assert len(found) == 7 and variant_cells(answer.body) == [CANARY] * 7  # 3 traces × 2 results + the pairwise one
    shown = {t for t in re.findall(r'href="/review/traces/([0-9a-f]{32})', answer.body)}
    assert shown == set(CANARY_TRACES)
    assert "<th>variant</th>" in answer.body


@pytest.mark.integration
def test_every_link_the_results_page_builds_keeps_the_variant(base: str) -> None:
    answer = fetch(base, f"/review/results?variant={CANARY}&evaluator=tool_success_rate&limit=2")
    links = [h for h in hrefs(answer.body) if h.startswith("/review/results?") or h.startswith("/review/breakdown?")]
    older = [h for h in links if "cursor=" in h]
    ranges = [h for h in links if "since=" in h and "breakdown" not in h]
    breakdown = [h for h in links if h.startswith("/review/breakdown?")]
    assert older and len(ranges) == 5 and breakdown
    for href in (*older, *ranges, *breakdown):
        assert query_of(href)["variant"] == [CANARY], href
    assert query_of(breakdown[0])["by"] == ["service"]  # the breakdown of this variant; no "by variant" link then
    second = fetch(base, older[0])
    assert variant_cells(second.body) == [CANARY] and "older →" not in second.body
    unfiltered = fetch(base, "/review/results?evaluator=tool_success_rate")
    by_variant = [h for h in hrefs(unfiltered.body) if "by=variant" in h]
    assert by_variant and query_of(by_variant[0]) == {"evaluator": ["tool_success_rate"], "by": ["variant"]}


@pytest.mark.integration
def test_without_variants_there_is_no_variant_column() -> None:
    reader = FakeReader.of([trace_detail("ab" * 16, [item(1, trace_id="ab" * 16)])])
    with serve(review_app(reader, None)) as base:
        body = fetch(base, "/review/results").body
        assert rows(body) and "<th>variant</th>" not in body and variant_cells(body) == []
        assert 'id="f-variant"' in body  # the filter is there all the same
        trace = fetch(base, f"/review/traces/{'ab' * 16}").body
        assert "<dt>variant</dt>" not in trace


@pytest.mark.integration
def test_the_breakdown_by_variant_links_to_each_variants_results(base: str, reader: FakeReader) -> None:
    answer = fetch(base, "/review/breakdown?by=variant&evaluator=tool_success_rate&since=1700000000")
    assert answer.status == 200 and reader.calls[-1] == (
        "breakdown",
        ("variant", "tool_success_rate", 1_700_000_000.0, None, None),
    )
    found = rows(answer.body, "breakdown")
    values = [unescape(re.search(r"<td>(?:<a [^>]*>|<span>)([^<]*)<", r)[1]) for r in found]  # type: ignore[index]
    assert values == [CANARY, BASELINE, "(none)"]  # most failures first; "" is not a link
    links = [h for h in hrefs(answer.body) if h.startswith("/review/results?")]
    assert [query_of(h) for h in links] == [
        {"evaluator": ["tool_success_rate"], "variant": [variant], "outcome": ["fail"], "since": ["1700000000"]}
        for variant in (CANARY, BASELINE)
    ]
    assert variant_cells(fetch(base, links[1]).body) == [BASELINE]  # the one failing baseline result


@pytest.mark.integration
def test_the_breakdown_of_one_variant_keeps_it_in_its_form_and_links(base: str, reader: FakeReader) -> None:
    answer = fetch(base, f"/review/breakdown?by=agent&variant={CANARY}")
    assert reader.calls[-1] == ("breakdown", ("agent", None, None, None, CANARY))
    assert f"Breakdown by agent of variant {CANARY}" in unescape(answer.body)
    assert f'name="variant" id="f-variant" value="{CANARY}"' in answer.body
    (link,) = [h for h in hrefs(answer.body) if h.startswith("/review/results?")]
    assert query_of(link) == {"variant": [CANARY], "agent": ["planner"], "outcome": ["fail"]}


@pytest.mark.integration
def test_the_trace_page_shows_the_variant_and_links_the_pairwise_partner(base: str) -> None:
    answer = fetch(base, f"/review/traces/{PAIRED}")
    assert answer.status == 200
    summary = re.search(r'<dl class="summary">(.*?)</dl>', answer.body, re.S)[1]  # type: ignore[index]
    assert (
        f'<dt>variant</dt><dd><a href="/review/results?variant={CANARY}&amp;outcome=any">{CANARY}</a></dd>' in summary
    )
    verdict = next(r for r in rows(answer.body, "verdicts") if PAIRWISE in r)
    partner_link = f'<a href="/review/traces/{BASELINE_TRACES[1]}" class="partner">'
    assert partner_link in verdict and f"({BASELINE})" in verdict
    baseline = fetch(base, f"/review/traces/{BASELINE_TRACES[1]}")
    assert baseline.status == 200 and f">{BASELINE}</a></dd>" in baseline.body


@pytest.mark.parametrize(
    ("details", "expected"),
    [
        (json.dumps({"partner_trace_id": "AB" * 16}), f'paired with <a href="/review/traces/{"ab" * 16}"'),
        (json.dumps({"partner_trace_id": '"><script>x</script>', "partner_variant": "<b>"}),
         '<code>&quot;&gt;&lt;script&gt;x&lt;/script&gt;</code> (&lt;b&gt;)'),
        (json.dumps({"partner_trace_id": "../../login"}), "<code>../../login</code>"),
    ],
)  # fmt: skip
def test_a_partner_id_is_a_link_only_when_it_is_a_trace_id(details: str, expected: str) -> None:
    shown = str(partner(details))
    assert expected in shown and "<script" not in shown
    assert shown.count("href=") == (1 if "href" in expected else 0)


@pytest.mark.parametrize(
    "details", [None, "", "not json", '{"partner_trace_id": 7}', "[1, 2]", '{"verdict": "pass"}', '{"partner_tr…']
)
def test_details_without_a_partner_show_nothing(details: str | None) -> None:
    assert partner(details) is None
