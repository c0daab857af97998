"""/api/v1/comparisons and /review/canary: the live variant comparisons of a real MetricsExporter, as JSON that
matches the OpenAPI document, and as a page whose links lead to the failing results behind each verdict."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from jsonschema import Draft202012Validator

from monitor.config.variants import VariantsConfig
from monitor.metrics import MetricsExporter
from monitor.review.models import PairwiseCounts
from monitor.web.app import build_api_app
from monitor.web.comparison_info import comparison_infos
from monitor.web.openapi import PREFIX, openapi_document
from tests.support.fake_reader import FakeReader
from tests.support.metrics_scrape import FakeClock, result
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration  # each test starts a process or a server

VARIANTS = VariantsConfig.model_validate(
    {
        "attribute": "service.version",
        "alpha": 0.01,
        "compare": [
            {"evaluator": "error_free", "baseline": "1.4", "candidate": "1.5", "window": "30m", "min_samples": 50},
            {"evaluator": "latency", "baseline": "1.4", "candidate": "1.5", "min_samples": 500},
        ],
    }
)


def exporter() -> MetricsExporter:
    m = MetricsExporter(clock=FakeClock(), variants=VARIANTS)
    for variant, failing in (("1.4", 5), ("1.5", 40)):
        for i in range(100):
            ok = i >= failing
            result(m, evaluator="error_free", variant=variant, passed=ok, score=1.0 if ok else 0.0)
            result(m, evaluator="latency", variant=variant, passed=True, score=0.9)
    return m


def app(m: MetricsExporter | None, pairwise=None):
    info = comparison_infos(m.results.comparisons.states, pairwise) if m is not None else None
    render = lambda accept: (b"", "text/plain")  # noqa: E731
    return build_api_app(render, dict, None, reader=FakeReader(items=[]), comparisons_info=info)


def test_the_api_gives_each_comparison_with_its_figures_and_matches_the_schema() -> None:
    m = exporter()
    with serve(app(m)) as base:
        status, _, body = get(f"{base}{PREFIX}/comparisons")
        bad, _, error = get(f"{base}{PREFIX}/comparisons?evaluator=x")
    assert status == 200 and bad == 400 and "unknown parameter" in error["error"]
    worse, latency = body
    assert worse["evaluator"] == "error_free" and worse["window"] == 1800 and worse["alpha"] == 0.01
    assert worse["baseline"] == {"variant": "1.4", "passed": 95, "total": 100, "pass_ratio": 0.95}
    assert worse["candidate"]["pass_ratio"] == 0.6
    assert abs(worse["delta"] + 0.35) < 1e-9 and worse["delta_lower"] < worse["delta"] < worse["delta_upper"] < 0
    assert worse["verdict"] == -1 and worse["reason"] == "worse" and worse["p_value_pass_rate"] < 0.01
    assert latency["verdict"] == 0 and latency["reason"] == "insufficient_samples" and latency["delta"] == 0
    assert latency["p_value_scores"] == 1.0  # every score tied
    document = openapi_document()
    schema = document["paths"][f"{PREFIX}/comparisons"]["get"]["responses"]["200"]["content"]["application/json"]
    root = {**schema["schema"], "components": document["components"]}
    assert not list(Draft202012Validator(root).iter_errors(body))


def test_no_comparison_configured_is_an_empty_list_and_a_page_that_says_so() -> None:
    with serve(app(None)) as base:
        status, _, body = get(f"{base}{PREFIX}/comparisons")
        page_status, _, page = get(f"{base}/review/canary")
        _, _, results_page = get(f"{base}/review")
    assert status == 200 and body == []
    assert page_status == 200 and "No comparison configured" in page
    assert 'href="/review/canary"' not in results_page  # no canary link without comparisons


def test_the_page_shows_the_verdicts_and_links_to_the_failures_behind_them() -> None:
    m = exporter()
    pairs = [PairwiseCounts(evaluator="pairwise_quality", win=3, tie=1, loss=7)]
    with serve(app(m, lambda baseline, candidate: pairs)) as base:
        status, _, page = get(f"{base}/review/canary")
        _, _, results_page = get(f"{base}/review")
    assert status == 200 and 'href="/review/canary"' in results_page
    rows = page.split("<tr")[2:]  # after the header row
    assert len(rows) == 2
    assert "worse" in rows[0] and "-35.0 pts" in rows[0] and "60.0% of 100" in rows[0]
    assert "too few results" in rows[1] and "need 500 a side" in rows[1]
    assert "3 won · 1 tied · 7 lost" in rows[0]
    links = [parse_qs(urlsplit(html.unescape(h)).query) | {"path": [urlsplit(html.unescape(h)).path]}
             for h in re.findall(r'href="([^"]+)"', rows[0])]  # fmt: skip
    assert {"path": ["/review/results"], "evaluator": ["error_free"], "variant": ["1.5"], "outcome": ["fail"],
            "since": ["1800s"]} in links  # fmt: skip
    assert {"path": ["/review/results"], "evaluator": ["error_free"], "variant": ["1.4"], "outcome": ["fail"],
            "since": ["1800s"]} in links  # fmt: skip
    assert {"path": ["/review/breakdown"], "evaluator": ["error_free"], "by": ["variant"], "since": ["1800s"]} in links
    assert {
        "path": ["/review/results"],
        "evaluator": ["pairwise_quality"],
        "variant": ["1.5"],
        "outcome": ["fail"],
    } in links
