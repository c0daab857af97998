"""The review API's query parameters: their names and JSON schemas (the OpenAPI document lists these very
specs, so the document and what the handlers accept cannot drift), and their parsing into a ResultFilter.

Times (`since`, `until`) are RFC 3339 timestamps (a timestamp without an offset is UTC), Unix seconds, or a
duration such as `30m`, `1h`, `7d` or `1h30m` meaning that long before now. Empty values mean "not given".
Every problem is a `BadRequest` whose message names the parameter. This is the one place query text is read:
each value is bounded (MAX_PARAM_CHARS) before it is parsed, and every parse is linear in its length (integers
are ASCII digits of bounded count, never `int()` of arbitrary text), so no request can hold the event loop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, get_args

from monitor.config.units import parse_duration
from monitor.review.models import BreakdownBy, BreakdownSort, Outcome, ResultFilter
from monitor.review.signature_models import DEFAULT_RANGE, SignatureFilter

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_PARAM_CHARS = 256  # longest query value read (names and values); a longer one is a 400
MAX_INT_DIGITS = 18  # a whole-number parameter fits a signed 64-bit integer
OUTCOMES: tuple[str, ...] = get_args(Outcome)
BREAKDOWN_BY: tuple[str, ...] = get_args(BreakdownBy)
BREAKDOWN_SORT: tuple[str, ...] = get_args(BreakdownSort)
_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
TRACE_ID_PATTERN = "^[0-9a-fA-F]{32}$"


class ReviewError(Exception):
    """A request the review cannot answer; `status` is its HTTP status, the message its `error` text."""

    status = 500


class BadRequest(ReviewError):
    status = 400


class NotFound(ReviewError):
    status = 404


class Unavailable(ReviewError):
    """The result store is disabled or failed; the message starts with "review unavailable: "."""

    status = 503


@dataclass(frozen=True, slots=True)
class QueryParam:
    name: str
    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "string"})


_TIME_SCHEMA = {"type": "string", "examples": ["2024-05-01T12:00:00Z", "1714564800", "1h"]}
_TIME_HELP = "RFC 3339 timestamp, Unix seconds (or milliseconds), or a duration before now (30m, 1h, 7d)"
EVALUATOR = QueryParam("evaluator", "Only this evaluator (its metric label).")
VARIANT = QueryParam(
    "variant", "Only results of traces of this variant (the agent version, `variants.attribute`; exact match)."
)
SINCE = QueryParam("since", f"Evaluated at or after: {_TIME_HELP}.", _TIME_SCHEMA)
UNTIL = QueryParam("until", f"Evaluated before: {_TIME_HELP}.", _TIME_SCHEMA)

RESULTS_PARAMS: tuple[QueryParam, ...] = (
    EVALUATOR,
    QueryParam("service", "Only results of traces from this service."),
    VARIANT,
    QueryParam("agent", "Only results on this agent (agent-level results)."),
    QueryParam("model", "Only results on this model (llm-level results)."),
    QueryParam("outcome", "Only this outcome.", {"type": "string", "enum": list(OUTCOMES)}),
    SINCE,
    UNTIL,
    QueryParam("trace_id", "Only this trace (32 hex characters).", {"type": "string", "pattern": TRACE_ID_PATTERN}),
    QueryParam(
        "limit",
        f"Results per page (1 to {MAX_LIMIT}).",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    ),
    QueryParam("cursor", "The `next_cursor` of the previous page (opaque)."),
)
BREAKDOWN_PARAMS: tuple[QueryParam, ...] = (
    QueryParam(
        "by", "The dimension to group by.", {"type": "string", "enum": list(BREAKDOWN_BY), "default": "service"}
    ),
    EVALUATOR,
    VARIANT,
    SINCE,
    UNTIL,
    QueryParam(
        "sort",
        "The order of the groups: most failures first, or most spend (USD) first.",
        {"type": "string", "enum": list(BREAKDOWN_SORT), "default": "failures"},
    ),
)


def shown(text: str, keep: int = 40) -> str:
    """`text` cut for an error message (its repr stays short however long the input)."""
    return text if len(text) <= keep else text[:keep] + "…"


def bounded(name: str, text: str) -> str:
    """`text` stripped; BadRequest when it is longer than MAX_PARAM_CHARS (checked before any parsing)."""
    if len(text) > MAX_PARAM_CHARS:
        raise BadRequest(f"{shown(name)}: longer than {MAX_PARAM_CHARS} characters")
    return text.strip()


def parse_int(name: str, text: str, minimum: int, maximum: int | None = None) -> int:
    """A whole number of ASCII digits, at least `minimum` (and at most `maximum` when given); BadRequest
    otherwise. The digit count is bounded before `int()`, whose cost grows faster than the text."""
    text = bounded(name, text)
    digits = text.lstrip("0") or "0"
    upper = f" to {maximum}" if maximum is not None else ""
    if not (text.isascii() and text.isdigit()) or len(digits) > MAX_INT_DIGITS:
        raise BadRequest(f"{name} must be a number from {minimum}{upper}, got {shown(text)!r}")
    value = int(digits)
    if value < minimum or (maximum is not None and value > maximum):
        raise BadRequest(f"{name} must be from {minimum}{upper}, got {value}")
    return value


def query_values(pairs: Iterable[tuple[str, str]], params: Iterable[QueryParam]) -> dict[str, str]:
    """The non-empty values of `pairs` by name, each at most MAX_PARAM_CHARS long; BadRequest for an unknown,
    repeated or overlong parameter."""
    known = [p.name for p in params]
    values: dict[str, str] = {}
    seen: set[str] = set()
    for name, raw in pairs:
        if name not in known:
            raise BadRequest(f"unknown parameter {shown(name)!r} (known: {', '.join(known)})")
        value = bounded(name, raw)
        if name in seen:
            raise BadRequest(f"parameter {name!r} given more than once")
        seen.add(name)
        if value:
            values[name] = value
    return values


MS_EPOCH = 1e11  # larger Unix times are milliseconds (Grafana's ${__from}); in seconds it is the year 5138
LATEST_TIME = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()  # the last second datetime can show


def parse_time(name: str, text: str, now: float) -> float:
    """Unix seconds from RFC 3339, Unix seconds (milliseconds above MS_EPOCH) or a duration before `now`, between
    the epoch and the year 9999; BadRequest otherwise (an overflowing duration such as 99999999999999999999d too)."""
    seconds = _parse_time(name, text, now)
    if not 0 <= seconds <= LATEST_TIME:
        raise BadRequest(f"{name}: {shown(text)!r} is out of range (a time between 1970 and 9999)")
    return seconds


def _parse_time(name: str, text: str, now: float) -> float:
    text = bounded(name, text)
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        if not math.isfinite(number) or number < 0:
            raise BadRequest(f"{name}: Unix seconds must be a finite number >= 0, got {shown(text)!r}")
        return number / 1000 if number > MS_EPOCH else number
    if text[:1].isdigit() and text[-1:].isalpha() and "-" not in text and ":" not in text:
        try:
            return now - parse_duration(text)
        except (ValueError, OverflowError):
            pass
    try:
        stamp = datetime.fromisoformat(text.upper())
    except ValueError:
        raise BadRequest(f"{name}: invalid time {shown(text)!r}: use {_TIME_HELP}") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def parse_limit(text: str | None) -> int:
    return DEFAULT_LIMIT if text is None else parse_int("limit", text, 1, MAX_LIMIT)


def parse_trace_id(text: str) -> str:
    """The trace id in lower case; BadRequest unless it is 32 hex characters."""
    if not _TRACE_ID.fullmatch(text):
        raise BadRequest(f"trace id must be 32 hex characters, got {shown(text)!r}")
    return text.lower()


def _time_range(values: dict[str, str], now: float) -> tuple[float | None, float | None]:
    since = parse_time("since", values["since"], now) if "since" in values else None
    until = parse_time("until", values["until"], now) if "until" in values else None
    if since is not None and until is not None and since >= until:
        raise BadRequest("since must be before until")
    return since, until


def results_query(pairs: Iterable[tuple[str, str]], now: float) -> tuple[ResultFilter, int, str | None]:
    """(filter, limit, cursor) of a `/api/v1/results` query."""
    values = query_values(pairs, RESULTS_PARAMS)
    outcome = values.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise BadRequest(f"outcome must be one of {', '.join(OUTCOMES)}, got {shown(outcome)!r}")
    since, until = _time_range(values, now)
    trace_id = parse_trace_id(values["trace_id"]) if "trace_id" in values else None
    where = ResultFilter(
        evaluator=values.get("evaluator"),
        service=values.get("service"),
        variant=values.get("variant"),
        agent=values.get("agent"),
        model=values.get("model"),
        outcome=outcome,  # type: ignore[arg-type]  # checked against OUTCOMES above
        since=since,
        until=until,
        trace_id=trace_id,
    )
    return where, parse_limit(values.get("limit")), values.get("cursor")


@dataclass(frozen=True, slots=True)
class BreakdownQuery:
    by: BreakdownBy
    evaluator: str | None
    since: float | None
    until: float | None
    variant: str | None = None
    sort: BreakdownSort = "failures"


def breakdown_query(pairs: Iterable[tuple[str, str]], now: float) -> BreakdownQuery:
    """The arguments of `ReviewReader.breakdown` from a `/api/v1/breakdown` query (`by` defaults to service)."""
    values = query_values(pairs, BREAKDOWN_PARAMS)
    by = values.get("by", "service")
    if by not in BREAKDOWN_BY:
        raise BadRequest(f"by must be one of {', '.join(BREAKDOWN_BY)}, got {shown(by)!r}")
    sort = values.get("sort", "failures")
    if sort not in BREAKDOWN_SORT:
        raise BadRequest(f"sort must be one of {', '.join(BREAKDOWN_SORT)}, got {shown(sort)!r}")
    since, until = _time_range(values, now)
    return BreakdownQuery(
        by,  # type: ignore[arg-type]  # checked against BREAKDOWN_BY above
        values.get("evaluator"),
        since,
        until,
        values.get("variant"),
        sort,  # type: ignore[arg-type]  # checked against BREAKDOWN_SORT above
    )


SIGNATURE_LIMIT = 50
MAX_SIGNATURE_LIMIT = 200
_SIGNATURE_ID = re.compile(r"[0-9a-fA-F]{16}")
SIGNATURE_ID_PATTERN = "^[0-9a-fA-F]{16}$"
_SIGNATURE_LIMIT = QueryParam(
    "limit",
    f"Items per page (1 to {MAX_SIGNATURE_LIMIT}).",
    {"type": "integer", "minimum": 1, "maximum": MAX_SIGNATURE_LIMIT, "default": SIGNATURE_LIMIT},
)
_RANGE_HELP = " Default: the last 24 hours before `until` (or now)."
SIGNATURES_PARAMS: tuple[QueryParam, ...] = (
    QueryParam("evaluator", "Only failures of this evaluator (its metric label)."),
    QueryParam("service", "Only failures of traces from this service."),
    QueryParam("agent", "Only failures on this agent."),
    VARIANT,
    QueryParam("since", f"Failures at or after: {_TIME_HELP}.{_RANGE_HELP}", _TIME_SCHEMA),
    QueryParam("until", f"Failures before: {_TIME_HELP}. Default: now.", _TIME_SCHEMA),
    _SIGNATURE_LIMIT,
    QueryParam("cursor", "The `next_cursor` of the previous page (opaque; it keeps that page's range)."),
)
SIGNATURE_PARAMS: tuple[QueryParam, ...] = (
    QueryParam("since", f"Traces with results at or after: {_TIME_HELP}.{_RANGE_HELP}", _TIME_SCHEMA),
    QueryParam("until", f"Traces with results before: {_TIME_HELP}. Default: now.", _TIME_SCHEMA),
    _SIGNATURE_LIMIT,
    QueryParam("cursor", "The `next_cursor` of the previous page (opaque)."),
)


@dataclass(frozen=True, slots=True)
class SignaturesQuery:
    """A `/api/v1/signatures` (or one signature's) query: the filter with its range, page size and cursor."""

    where: SignatureFilter
    limit: int
    cursor: str | None


def signatures_query(pairs: Iterable[tuple[str, str]], now: float, one: bool = False) -> SignaturesQuery:
    """The query of `/api/v1/signatures` (`one`: of `/api/v1/signatures/{id}`, which takes the range only)."""
    values = query_values(pairs, SIGNATURE_PARAMS if one else SIGNATURES_PARAMS)
    since, until = _time_range(values, now)
    until = now if until is None else until
    since = until - DEFAULT_RANGE if since is None else since
    if since >= until:
        raise BadRequest("since must be before until")
    limit = SIGNATURE_LIMIT if "limit" not in values else parse_int("limit", values["limit"], 1, MAX_SIGNATURE_LIMIT)
    where = SignatureFilter(
        since=since,
        until=until,
        evaluator=values.get("evaluator"),
        service=values.get("service"),
        agent=values.get("agent"),
        variant=values.get("variant"),
    )
    return SignaturesQuery(where, limit, values.get("cursor"))


def parse_signature_id(text: str) -> str:
    """The signature id in lower case; BadRequest unless it is 16 hex characters."""
    if not _SIGNATURE_ID.fullmatch(text):
        raise BadRequest(f"signature id must be 16 hex characters, got {shown(text)!r}")
    return text.lower()
