"""The review API v1 under /api/v1: results, one trace, a breakdown, failure signatures (by impact, and one with
its traces), conversations (sessions, and one with its turns), the evaluators, drift's changes (api_changes.py),
what sets a slice of traces apart (api_explain.py), the OpenAPI document, and the reviewers' verdicts
(api_reviews.py: the only path that writes).

Handlers read what they are given: a ReviewReader (None: the store is disabled) and a callable listing the
configured evaluators. Reader calls run on a worker thread, so SQLite never blocks the event loop that also
serves /metrics and the receivers (the reader must allow that: one connection under a lock, as ResultStore).
Every answer is JSON; an error is `{"error": "..."}` with 400, 404 or 503 (see monitor/review/api_params.py),
and an unexpected exception is logged and answered 500 without its traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable

from aiohttp import web
from pydantic import BaseModel, TypeAdapter

from monitor.config.drift import DriftConfig
from monitor.review.api_params import ReviewError, Unavailable
from monitor.review.models import EvaluatorStatus, ReviewReader, VariantComparison
from monitor.review.service import RESOLVE_AFTER, STORE_DISABLED, ReviewService
from monitor.web.access import Access
from monitor.web.api_changes import changes_routes
from monitor.web.api_explain import explain_routes
from monitor.web.api_reviews import review_routes
from monitor.web.changes import ChangesSource
from monitor.web.explain_info import ExplainSource
from monitor.web.openapi import OPENAPI_PATH, PREFIX, openapi_document
from monitor.web.review_writer import ReviewWriter

log = logging.getLogger(__name__)

EvaluatorsInfo = Callable[[], list[EvaluatorStatus]]
ComparisonsInfo = Callable[[], list[VariantComparison]]
_EVALUATORS = TypeAdapter(list[EvaluatorStatus])
_COMPARISONS = TypeAdapter(list[VariantComparison])


def json_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = json.dumps({"error": message}, ensure_ascii=False).encode()
    return web.Response(status=status, body=body, content_type="application/json", headers=headers)


def _json(body: bytes) -> web.Response:
    return web.Response(body=body, content_type="application/json")


async def _answer(read: Callable[[], BaseModel]) -> web.Response:
    """`read()` on a worker thread, as JSON; its ReviewError as an error answer."""
    try:
        model = await asyncio.to_thread(read)
    except ReviewError as exc:
        return json_error(exc.status, str(exc))
    except Exception:
        log.exception("review API: unexpected error")
        return json_error(500, "internal error (see the daemon's log)")
    return _json(model.model_dump_json().encode())


def api_v1_routes(
    reader: ReviewReader | None,
    evaluators_info: EvaluatorsInfo | None,
    *,
    unavailable: str = STORE_DISABLED,
    clock: Callable[[], float] = time.time,
    comparisons_info: ComparisonsInfo | None = None,
    resolve_after: float = RESOLVE_AFTER,
    reviewing: ReviewWriter | None = None,
    access: Access | None = None,
    changes: ChangesSource | None = None,
    drift: DriftConfig | None = None,
    explainer: ExplainSource | None = None,
    explain_unavailable: str | None = None,
) -> list[web.RouteDef]:
    """The routes of /api/v1; `unavailable`: the 503 reason while `reader` is None; `clock`: the "now" of relative
    times; `comparisons_info`: the live variant comparisons (none: []); `resolve_after`: signatures.resolve_after;
    `reviewing` writes reviews (None: 503) with the token of `access` (None, or no token: nothing is reviewed);
    `changes`: drift's latest report (None: drift is not run, 503) and `drift` its config (api_changes.py);
    `explainer`: what explains a slice (None: 503 with `explain_unavailable` as the reason; api_explain.py)."""
    review = ReviewService(reader, unavailable, clock, resolve_after)

    async def results(request: web.Request) -> web.Response:
        pairs = list(request.query.items())
        return await _answer(lambda: review.results(pairs))

    async def trace(request: web.Request) -> web.Response:
        trace_id = request.match_info["trace_id"]
        return await _answer(lambda: review.trace(trace_id))

    async def breakdown(request: web.Request) -> web.Response:
        pairs = list(request.query.items())
        return await _answer(lambda: review.breakdown(pairs))

    return [
        web.get(f"{PREFIX}/results", results),
        web.get(f"{PREFIX}/traces/{{trace_id}}", trace),
        web.get(f"{PREFIX}/breakdown", breakdown),
        *_signature_routes(review),
        *_session_routes(review),
        *review_routes(review, reviewing, access, _answer, json_error),
        *_live_routes(evaluators_info, comparisons_info),
        *changes_routes(changes, drift, _answer, json_error),
        *explain_routes(explainer, explain_unavailable, _answer, json_error, clock),
        _openapi_route(),
    ]


def _live_routes(
    evaluators_info: EvaluatorsInfo | None, comparisons_info: ComparisonsInfo | None
) -> list[web.RouteDef]:
    """/evaluators and /comparisons: what the daemon holds in memory."""

    async def evaluators(request: web.Request) -> web.Response:
        if request.query:
            return json_error(400, f"unknown parameter {next(iter(request.query))!r} (known: none)")
        try:
            if evaluators_info is None:
                raise Unavailable("review unavailable: no evaluator information in this process")
            infos = evaluators_info()
        except ReviewError as exc:
            return json_error(exc.status, str(exc))
        except Exception:
            log.exception("review API: cannot list the evaluators")
            return json_error(500, "internal error (see the daemon's log)")
        return _json(_EVALUATORS.dump_json(infos))

    async def comparisons(request: web.Request) -> web.Response:
        if request.query:
            return json_error(400, f"unknown parameter {next(iter(request.query))!r} (known: none)")
        try:
            found = comparisons_info() if comparisons_info is not None else []
        except Exception:
            log.exception("review API: cannot compute the variant comparisons")
            return json_error(500, "internal error (see the daemon's log)")
        return _json(_COMPARISONS.dump_json(found))

    return [web.get(f"{PREFIX}/evaluators", evaluators), web.get(f"{PREFIX}/comparisons", comparisons)]


def _openapi_route() -> web.RouteDef:
    document = json.dumps(openapi_document(), ensure_ascii=False).encode()

    async def openapi(request: web.Request) -> web.Response:
        return _json(document)

    return web.get(OPENAPI_PATH, openapi)


def _signature_routes(review: ReviewService) -> list[web.RouteDef]:
    """/signatures (by impact) and /signatures/{signature_id} (one, with its traces)."""

    async def signatures(request: web.Request) -> web.Response:
        pairs = list(request.query.items())
        return await _answer(lambda: review.signatures(pairs))

    async def signature(request: web.Request) -> web.Response:
        ident, pairs = request.match_info["signature_id"], list(request.query.items())
        return await _answer(lambda: review.signature(ident, pairs))

    return [web.get(f"{PREFIX}/signatures", signatures), web.get(f"{PREFIX}/signatures/{{signature_id}}", signature)]


def _session_routes(review: ReviewService) -> list[web.RouteDef]:
    """/sessions (conversations, newest completed first) and /sessions/{session_id} (one, with its turns)."""

    async def sessions(request: web.Request) -> web.Response:
        pairs = list(request.query.items())
        return await _answer(lambda: review.sessions(pairs))

    async def session(request: web.Request) -> web.Response:
        ident = request.match_info["session_id"]
        return await _answer(lambda: review.session(ident))

    return [web.get(f"{PREFIX}/sessions", sessions), web.get(f"{PREFIX}/sessions/{{session_id}}", session)]


def api_error_response(
    request: web.Request, status: int, message: str, headers: dict[str, str] | None = None
) -> web.Response | None:
    """A JSON error for a path under /api/v1; None elsewhere (where the caller answers in text)."""
    if request.path == PREFIX or request.path.startswith(PREFIX + "/"):
        return json_error(status, message, headers)
    return None
