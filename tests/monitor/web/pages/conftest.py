"""The review page's data source is one fixture, `review_source`: a reader and the facts it holds. The
daemon-level variant overrides it with the store's real reader fed by corpus traces."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from monitor.review.models import ReviewReader
from tests.monitor.web.pages.sample import Facts, evaluator_infos, older_latency_failures, sample_facts, sample_traces
from tests.support.fake_reader import FakeReader
from tests.support.metrics_port import JAEGER, review_app, serve

TOKEN = "review-token-s3cret"


@dataclass(frozen=True)
class Source:
    reader: ReviewReader
    facts: Facts


@dataclass(frozen=True)
class Site:
    base: str  # http://127.0.0.1:<port>
    token: str
    facts: Facts
    trace_url_template: str


@pytest.fixture
def review_source() -> Source:
    return Source(FakeReader.of(sample_traces(), older_latency_failures()), sample_facts())


@pytest.fixture
def review_site(review_source: Source) -> Iterator[Site]:
    """The metrics port with the review page on 127.0.0.1, a token configured."""
    with serve(review_app(review_source.reader, TOKEN, evaluator_infos)) as base:
        yield Site(base, TOKEN, review_source.facts, JAEGER)
