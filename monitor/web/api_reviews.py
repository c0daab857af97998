"""Reviewers' verdicts on the review API: `POST /api/v1/reviews` writes one, `GET /api/v1/reviews` lists the
reviews in force, `GET /api/v1/reviews/history` is one result's audit trail.

Writing needs the API token configured (`api.auth.bearer_token_file`; without one nothing can be reviewed: 403)
and `Authorization: Bearer <token>` on the request itself (401 otherwise): neither a loopback client without a
token nor the review page's session cookie is enough to write here (the page writes through its own forms, with
their CSRF check). The body is a JSON object of at most MAX_BODY_BYTES. Reads follow the API's access rules.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from pydantic import BaseModel

from monitor.auth import bearer_authorized
from monitor.review.api_params import BadRequest, ReviewError, Unavailable
from monitor.review.review_models import review_record
from monitor.review.review_params import MAX_BODY_BYTES, review_request
from monitor.review.service import ReviewService
from monitor.web.access import UNAUTHORIZED, Access
from monitor.web.openapi import PREFIX
from monitor.web.review_writer import ReviewWriter

log = logging.getLogger(__name__)
Answer = Callable[[Callable[[], BaseModel]], Awaitable[web.Response]]  # api_v1's: a read on a worker thread, as JSON
ErrorAnswer = Callable[..., web.Response]  # api_v1's json_error(status, message, headers=None)
NO_TOKEN = (
    "reviewing needs the API token: no token is configured, so nothing can be reviewed; set "
    "api.auth.bearer_token_file (or AGENT_MONITOR_API__AUTH__BEARER_TOKEN_FILE)"
)
NEEDS_BEARER = f"{UNAUTHORIZED}: writing a review needs Authorization: Bearer <the API token>"
NO_REVIEWING = "review unavailable: this process does not write reviews"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="agent-monitor"'}


class TooLarge(ReviewError):
    status = 413


async def bounded_body(request: web.Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, TooLarge past `limit` bytes (read no further than that)."""
    if request.content_length is not None and request.content_length > limit:
        raise TooLarge(f"the body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(limit + 1 - size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the body is larger than {limit} bytes")


def review_routes(
    review: ReviewService, reviewing: ReviewWriter | None, access: Access | None, answer: Answer, error: ErrorAnswer
) -> list[web.RouteDef]:
    """The routes of /api/v1/reviews; `answer(read)` and `error(status, message, headers)` are api_v1's."""

    async def post_review(request: web.Request) -> web.Response:
        token = access.token if access is not None else None
        if not token:
            return error(403, NO_TOKEN)
        if not bearer_authorized(request.headers.get("Authorization"), token):
            return error(401, NEEDS_BEARER, _CHALLENGE)
        try:
            if request.query:
                raise BadRequest(f"unknown parameter {next(iter(request.query))!r} (known: none)")
            asked = review_request(await bounded_body(request))
            if reviewing is None:
                raise Unavailable(NO_REVIEWING)
            stored = await reviewing.review(asked.as_input())
        except ReviewError as exc:
            return error(exc.status, str(exc))
        except Exception:
            log.exception("review API: cannot write a review")
            return error(500, "internal error (see the daemon's log)")
        body = review_record(stored).model_dump_json().encode()
        return web.Response(status=201, body=body, content_type="application/json")

    async def list_reviews(request: web.Request) -> web.Response:
        pairs = list(request.query.items())
        return await answer(lambda: review.reviews(pairs))

    async def history(request: web.Request) -> web.Response:
        pairs = list(request.query.items())
        return await answer(lambda: review.review_history(pairs))

    return [
        web.post(f"{PREFIX}/reviews", post_review),
        web.get(f"{PREFIX}/reviews", list_reviews),
        web.get(f"{PREFIX}/reviews/history", history),
    ]
