"""The review query parameters (shared with /api/v1): times, outcome default, limits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from monitor.web.page_params import QueryError, limit_param, query_time, result_filter

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15m", NOW - 900),
        ("1h30m", NOW - 5400),
        ("7d", NOW - 7 * 86400),
        ("1767222000", 1_767_222_000.0),
        ("1767222000000", 1_767_222_000.0),  # Grafana's ${__from}: milliseconds
        ("2025-12-31T23:00:00Z", NOW - 3600),
        ("2025-12-31T23:00", NOW - 3600),  # no zone: UTC
        ("2026-01-01T01:00:00+02:00", NOW - 3600),
    ],
)
def test_times(text: str, expected: float) -> None:
    assert query_time(text, NOW) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["yesterday", "1y", "-5m", "2025-13-01", "nan"])
def test_bad_times(text: str) -> None:
    with pytest.raises(QueryError, match="since"):
        query_time(text, NOW)


def test_filter_from_a_query() -> None:
    where = result_filter({"evaluator": " latency ", "service": "", "since": "1h"}, NOW, default_outcome="fail")
    assert (where.evaluator, where.service, where.outcome, where.since) == ("latency", None, "fail", NOW - 3600)
    assert result_filter({"outcome": ""}, NOW, default_outcome="fail").outcome is None
    assert result_filter({"outcome": "any"}, NOW, default_outcome="fail").outcome is None
    assert result_filter({"outcome": "skip"}, NOW).outcome == "skip"
    assert result_filter({}, NOW).outcome is None
    until = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert result_filter({"until": "2026-01-01T00:00:00Z"}, NOW).until == until


def test_limits() -> None:
    assert limit_param({}, 50, 500) == 50
    assert limit_param({"limit": "9999"}, 50, 500) == 500
    for bad in ("0", "-1", "x", "1.5"):
        with pytest.raises(QueryError):
            limit_param({"limit": bad}, 50, 500)
