"""The query parameters of `GET /api/v1/reviews` and `GET /api/v1/reviews/history`, and the body of
`POST /api/v1/reviews` (its model is `review_models.ReviewRequest`): specs the OpenAPI document lists, parsed
into a ReviewFilter or a ResultKey. Every problem is a BadRequest naming the parameter or field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from pydantic import ValidationError

from monitor import client_json
from monitor.review.api_params import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SINCE,
    TRACE_ID_PATTERN,
    BadRequest,
    QueryParam,
    parse_limit,
    parse_time,
    parse_trace_id,
    query_values,
    shown,
)
from monitor.review.review_models import Agreement, ReviewFilter, ReviewRequest
from monitor.store.reviews import ResultKey

AGREEMENTS: tuple[str, ...] = get_args(Agreement)
MAX_BODY_BYTES = 16 * 1024  # a review's JSON body: a note of 2000 characters fits many times over
_TRACE_ID_SCHEMA = {"type": "string", "pattern": TRACE_ID_PATTERN}

REVIEWS_PARAMS: tuple[QueryParam, ...] = (
    QueryParam("evaluator", "Only reviews of this evaluator's verdicts (its metric label)."),
    QueryParam("trace_id", "Only reviews of this trace's results (32 hex characters).", _TRACE_ID_SCHEMA),
    QueryParam("reviewer", "Only reviews by this reviewer (exact name)."),
    QueryParam("agreement", "Only agreeing or disagreeing reviews.", {"type": "string", "enum": list(AGREEMENTS)}),
    QueryParam(SINCE.name, SINCE.description.replace("Evaluated", "Reviewed"), SINCE.schema),
    QueryParam(
        "limit",
        f"Reviews to list, newest first (1 to {MAX_LIMIT}).",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    ),
)
HISTORY_PARAMS: tuple[QueryParam, ...] = (
    QueryParam("trace_id", "The result's trace (32 hex characters; required).", _TRACE_ID_SCHEMA),
    QueryParam("evaluator", "The result's evaluator (its metric label; required)."),
    QueryParam("level", "The result's level: trace (the default), agent, llm or session.", {"type": "string"}),
    QueryParam(
        "span_id",
        "The result's span: needed only when the evaluator has results on several spans of that level.",
        {"type": "string"},
    ),
)


def reviews_query(pairs: Iterable[tuple[str, str]], now: float) -> tuple[ReviewFilter, int]:
    """(filter, limit) of a `GET /api/v1/reviews` query."""
    values = query_values(pairs, REVIEWS_PARAMS)
    agreement = values.get("agreement")
    if agreement is not None and agreement not in AGREEMENTS:
        raise BadRequest(f"agreement must be one of {', '.join(AGREEMENTS)}, got {shown(agreement)!r}")
    where = ReviewFilter(
        evaluator=values.get("evaluator"),
        trace_id=parse_trace_id(values["trace_id"]) if "trace_id" in values else None,
        reviewer=values.get("reviewer"),
        agreement=agreement,  # type: ignore[arg-type]  # checked against AGREEMENTS above
        since=parse_time("since", values["since"], now) if "since" in values else None,
    )
    return where, parse_limit(values.get("limit"))


def history_query(pairs: Iterable[tuple[str, str]]) -> ResultKey:
    """The result a `GET /api/v1/reviews/history` query names."""
    values = query_values(pairs, HISTORY_PARAMS)
    for required in ("trace_id", "evaluator"):
        if required not in values:
            raise BadRequest(f"{required} is required")
    return ResultKey(
        parse_trace_id(values["trace_id"]), values["evaluator"], values.get("level", "trace"), values.get("span_id", "")
    )


def review_request(body: bytes) -> ReviewRequest:
    """The review a `POST /api/v1/reviews` body asks for; BadRequest naming the first problem."""
    try:
        data = client_json.loads(body)
    except client_json.JsonTooDeep as exc:
        raise BadRequest(f"the body must be a JSON object: {exc}") from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("the body must be a JSON object (Content-Type: application/json)") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    try:
        return ReviewRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise BadRequest(f"{shown(where)}: {first['msg']}") from None
