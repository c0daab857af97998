"""The review query parameters shared by /review and /api/v1/results: evaluator, service, variant, agent, model,
outcome, since, until, cursor, limit.

`since` and `until` are either a duration back from now ("15m", "1h", "7d", "1h30m") or an absolute time:
Unix seconds ("1735787045", milliseconds when it has 13 digits, as Grafana's `${__from}`) or ISO 8601
("2025-01-02T03:04:05Z"; without a zone it is UTC). An empty parameter is the same as a missing one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import get_args

from monitor.review.api_params import MAX_PARAM_CHARS, BadRequest, bounded, parse_int
from monitor.review.api_params import parse_time as api_parse_time
from monitor.review.models import BreakdownBy, BreakdownSort, Outcome, ResultFilter

FILTER_KEYS = ("evaluator", "service", "variant", "agent", "model", "outcome", "since", "until")
QUERY_KEYS = (*FILTER_KEYS, "cursor", "limit")
OUTCOMES: tuple[str, ...] = get_args(Outcome)
BREAKDOWN_BY: tuple[str, ...] = get_args(BreakdownBy)
MAX_TEXT = MAX_PARAM_CHARS  # longest value taken: the API's bound (monitor/review/api_params.py)


class QueryError(ValueError):
    """A parameter that cannot be read; the message names it and is safe to show (it is escaped on output)."""


def text_param(query: Mapping[str, str], key: str) -> str | None:
    """The parameter's value, stripped; None when missing or empty."""
    try:
        return bounded(key, query.get(key, "")) or None
    except BadRequest as exc:
        raise QueryError(str(exc)) from None


def query_time(value: str, now: float, key: str = "since") -> float:
    """Unix seconds from a duration back from `now`, Unix seconds or milliseconds, or ISO 8601 (UTC if naive):
    the API's parsing (monitor/review/api_params.py), so a link works on both."""
    try:
        return api_parse_time(key, value.strip(), now)
    except BadRequest as exc:
        raise QueryError(str(exc)) from None


def time_param(query: Mapping[str, str], key: str, now: float) -> float | None:
    value = text_param(query, key)
    return None if value is None else query_time(value, now, key)


def result_filter(
    query: Mapping[str, str], now: float | None = None, default_outcome: str | None = None
) -> ResultFilter:
    """The ResultFilter of the query. `outcome` missing → `default_outcome`; empty or `any` → every outcome."""
    now = time.time() if now is None else now
    if "outcome" in query:
        outcome = text_param(query, "outcome")
        outcome = None if outcome in (None, "any", "all") else outcome
    else:
        outcome = default_outcome
    if outcome is not None and outcome not in OUTCOMES:
        raise QueryError(f"outcome: {outcome!r} is not one of {', '.join(OUTCOMES)} or any")
    since, until = time_param(query, "since", now), time_param(query, "until", now)
    if since is not None and until is not None and since >= until:
        raise QueryError("since must be before until")
    return ResultFilter(
        evaluator=text_param(query, "evaluator"),
        service=text_param(query, "service"),
        variant=text_param(query, "variant"),
        agent=text_param(query, "agent"),
        model=text_param(query, "model"),
        outcome=outcome,  # type: ignore[arg-type]  # checked against OUTCOMES above
        since=since,
        until=until,
    )


def limit_param(query: Mapping[str, str], default: int, maximum: int) -> int:
    """`limit` as an int in [1, maximum]; `default` when missing."""
    value = text_param(query, "limit")
    if value is None:
        return default
    try:
        return min(parse_int("limit", value, 1), maximum)
    except BadRequest as exc:
        raise QueryError(str(exc)) from None


def breakdown_by(query: Mapping[str, str], default: str = "service") -> str:
    by = text_param(query, "by") or default
    if by not in BREAKDOWN_BY:
        raise QueryError(f"by: {by!r} is not one of {', '.join(BREAKDOWN_BY)}")
    return by


BREAKDOWN_SORT: tuple[str, ...] = get_args(BreakdownSort)


def breakdown_sort(query: Mapping[str, str]) -> str:
    sort = text_param(query, "sort") or "failures"
    if sort not in BREAKDOWN_SORT:
        raise QueryError(f"sort: {sort!r} is not one of {', '.join(BREAKDOWN_SORT)}")
    return sort
