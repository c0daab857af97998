"""What the web layer knows of explanations (issue 42): `ExplainSource`, the seam it calls (the daemon's
`monitor.explain.service.Explainer`, typed here so that the web layer does not import the service), and the
query of `/api/v1/explain` and `/review/explain`: its parameters (the OpenAPI document lists these very specs)
and their parsing into an `ExplainQuery`.

`since` defaults to an hour before `until`, `until` to now; `reference_since` without `reference_until` means
the reference range ends where the slice begins. Every problem is a `BadRequest` naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from monitor.explain.model import ExplainQuery, Explanation
from monitor.review.api_params import (
    SIGNATURE_ID_PATTERN,
    SINCE,
    BadRequest,
    QueryParam,
    parse_time,
    query_values,
    shown,
)

DEFAULT_RANGE = 3600.0  # since: this long before until
UNAVAILABLE = "explain unavailable: "
DISABLED = "explanations are off (explain.enabled: false) or the result store is disabled"
_SIGNATURE_ID = re.compile(SIGNATURE_ID_PATTERN)
_TIME_HELP = "RFC 3339 timestamp, Unix seconds (or milliseconds), or a duration before now (30m, 1h, 7d)"


class ExplainSource(Protocol):
    """What explains a slice: blocking (SQL and numpy, up to about a second), so it is called on a worker thread.
    Raises `BadRequest` for an invalid query, `Unavailable` while the store is down or disabled."""

    def explain(self, query: ExplainQuery) -> Explanation: ...


EXPLAIN_PARAMS: tuple[QueryParam, ...] = (
    QueryParam(
        "evaluator",
        "The evaluator (its metric label) whose failing traces are explained against its passing ones; with "
        "`signature`, the reference is its other verdicts.",
    ),
    QueryParam(
        "signature",
        "A failure signature's id (16 hex characters): its traces against the evaluator's other verdicts.",
        {"type": "string", "pattern": SIGNATURE_ID_PATTERN},
    ),
    QueryParam("service", "Only traces of this service."),
    QueryParam("agent", "Only traces of this agent."),
    QueryParam("variant", "Only traces of this variant (the agent version, `variants.attribute`)."),
    QueryParam("since", f"Traces at or after: {_TIME_HELP}. Default: an hour before `until`.", SINCE.schema),
    QueryParam("until", f"Traces before: {_TIME_HELP}. Default: now.", SINCE.schema),
    QueryParam(
        "reference_since",
        f"The reference range's start (a drift's baseline): {_TIME_HELP}. Given, the slice's traces are compared "
        "with those of the reference range instead of the rest of the slice's range.",
        SINCE.schema,
    ),
    QueryParam(
        "reference_until",
        f"The reference range's end: {_TIME_HELP}. Default (with `reference_since`): `since`.",
        SINCE.schema,
    ),
)


def unavailable_message(reason: str | None) -> str:
    """The 503 message: `explain unavailable: <reason>`."""
    return UNAVAILABLE + (reason or DISABLED)


def _times(values: dict[str, str], now: float) -> dict[str, float]:
    times = {name: parse_time(name, values[name], now) for name in values if name.endswith(("since", "until"))}
    until = times.setdefault("until", now)
    since = times.setdefault("since", until - DEFAULT_RANGE)
    if since >= until:
        raise BadRequest("since must be before until")
    if "reference_until" in times and "reference_since" not in times:
        raise BadRequest("reference_until: give reference_since with it")
    if "reference_since" in times:
        reference_until = times.setdefault("reference_until", since)
        if times["reference_since"] >= reference_until:
            raise BadRequest("reference_since must be before reference_until")
    return times


def explain_query(pairs: Iterable[tuple[str, str]], now: float) -> ExplainQuery:
    """The `ExplainQuery` of `/api/v1/explain` (and `/review/explain`); BadRequest for an unknown, repeated or bad
    parameter."""
    values = query_values(pairs, EXPLAIN_PARAMS)
    signature = values.get("signature")
    if signature is not None:
        if not _SIGNATURE_ID.fullmatch(signature):
            raise BadRequest(f"signature must be 16 hex characters, got {shown(signature)!r}")
        signature = signature.lower()
    times = _times(values, now)
    return ExplainQuery(
        evaluator=values.get("evaluator"),
        signature=signature,
        service=values.get("service"),
        agent=values.get("agent"),
        variant=values.get("variant"),
        since=times["since"],
        until=times["until"],
        reference_since=times.get("reference_since"),
        reference_until=times.get("reference_until"),
    )
