"""`GET /api/v1/explain`: what sets a slice of traces apart from its reference (issue 42): the dimension values
(and pairs) of an evaluator's failures, a failure signature's traces, a drift's recent window or a filter, ranked
by share difference, with lift and Benjamini–Hochberg q-values (monitor/explain/model.py `Explanation`).

The query is parsed here (monitor/web/explain_info.py) and explained by the daemon's explainer on a worker
thread (SQL and numpy: it must not block the event loop). No explainer (explain.enabled: false, or the store
disabled): 503 `explain unavailable: <reason>`. Access is the API's (access.py middleware).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from pydantic import BaseModel

from monitor.review.api_params import ReviewError
from monitor.web.explain_info import ExplainSource, explain_query, unavailable_message
from monitor.web.openapi import PREFIX

Answer = Callable[[Callable[[], BaseModel]], Awaitable[web.Response]]  # api_v1's: a read on a worker thread
ErrorAnswer = Callable[..., web.Response]  # api_v1's json_error(status, message, headers=None)
PATH = f"{PREFIX}/explain"


def explain_routes(
    explainer: ExplainSource | None,
    unavailable: str | None,
    answer: Answer,
    error: ErrorAnswer,
    clock: Callable[[], float] = time.time,
) -> list[web.RouteDef]:
    """The route of /api/v1/explain; `unavailable`: the 503 reason while `explainer` is None."""

    async def handler(request: web.Request) -> web.Response:
        try:
            query = explain_query(list(request.query.items()), clock())
        except ReviewError as exc:
            return error(exc.status, str(exc))
        if explainer is None:
            return error(503, unavailable_message(unavailable))
        return await answer(lambda: explainer.explain(query))

    return [web.get(PATH, handler)]
