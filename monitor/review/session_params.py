"""The query parameters of `/api/v1/sessions` (specs the OpenAPI document lists, and their parsing into a
SessionFilter) and the check of a session id in a path; the shared rules are api_params.py's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from monitor.review.api_params import (
    _TIME_HELP,
    _TIME_SCHEMA,
    BadRequest,
    QueryParam,
    _time_range,
    parse_int,
    query_values,
    shown,
)
from monitor.review.session_models import MAX_SESSION_ID_CHARS, SessionFilter

SESSION_LIMIT = 50
MAX_SESSION_LIMIT = 200
SESSION_ID_PATTERN = f"^.{{1,{MAX_SESSION_ID_CHARS}}}$"
TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")

SESSIONS_PARAMS: tuple[QueryParam, ...] = (
    QueryParam("service", "Only conversations of this service."),
    QueryParam("evaluator", "Only conversations with a session-level result of this evaluator (its metric label)."),
    QueryParam(
        "failing",
        "Only conversations with a failing session-level result (with `evaluator`: a failing result of it).",
        {"type": "boolean", "default": False},
    ),
    QueryParam("since", f"Completed at or after: {_TIME_HELP}.", _TIME_SCHEMA),
    QueryParam("until", f"Completed before: {_TIME_HELP}.", _TIME_SCHEMA),
    QueryParam(
        "limit",
        f"Conversations per page (1 to {MAX_SESSION_LIMIT}).",
        {"type": "integer", "minimum": 1, "maximum": MAX_SESSION_LIMIT, "default": SESSION_LIMIT},
    ),
    QueryParam("cursor", "The `next_cursor` of the previous page (opaque)."),
)


@dataclass(frozen=True, slots=True)
class SessionsQuery:
    where: SessionFilter
    limit: int
    cursor: str | None


def parse_flag(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise BadRequest(f"{name} must be true or false, got {shown(text)!r}")


def sessions_query(pairs: Iterable[tuple[str, str]], now: float) -> SessionsQuery:
    """The query of `/api/v1/sessions`."""
    values = query_values(pairs, SESSIONS_PARAMS)
    since, until = _time_range(values, now)
    limit = SESSION_LIMIT if "limit" not in values else parse_int("limit", values["limit"], 1, MAX_SESSION_LIMIT)
    where = SessionFilter(
        service=values.get("service"),
        evaluator=values.get("evaluator"),
        failing=parse_flag("failing", values["failing"]) if "failing" in values else False,
        since=since,
        until=until,
    )
    return SessionsQuery(where, limit, values.get("cursor"))


def parse_session_id(text: str) -> str:
    """The session id as given; BadRequest when it is empty or longer than MAX_SESSION_ID_CHARS."""
    if not text or len(text) > MAX_SESSION_ID_CHARS:
        raise BadRequest(f"session id must be 1 to {MAX_SESSION_ID_CHARS} characters, got {shown(text)!r}")
    return text
