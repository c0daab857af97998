"""`GET /api/v1/changes`: drift's latest report (monitor/detection), its active changes (or every tested signal
with `all=true`) largest |effect| first, as monitor/web/changes.py makes them.

The report is the daemon's, handed over by a callable (None: drift is not run; it returning None: no report
yet); both answer 503 with a `drift unavailable: ` reason, as the store-backed endpoints do while the store is
disabled (with `Retry-After` while the first report is awaited). Access is the API's (access.py middleware).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from pydantic import BaseModel

from monitor.config.drift import DriftConfig
from monitor.review.api_params import ReviewError
from monitor.web.changes import DISABLED, ChangesSource, changes_page, changes_query, no_report_reason
from monitor.web.openapi import PREFIX

log = logging.getLogger(__name__)
Answer = Callable[[Callable[[], BaseModel]], Awaitable[web.Response]]  # api_v1's: a read on a worker thread
ErrorAnswer = Callable[..., web.Response]  # api_v1's json_error(status, message, headers=None)
PATH = f"{PREFIX}/changes"


def changes_routes(
    changes: ChangesSource | None, drift: DriftConfig | None, answer: Answer, error: ErrorAnswer
) -> list[web.RouteDef]:
    """The route of /api/v1/changes; `drift`: the config section (the summaries' wording, the retry delay)."""

    async def handler(request: web.Request) -> web.Response:
        try:
            query = changes_query(list(request.query.items()))
        except ReviewError as exc:
            return error(exc.status, str(exc))
        if changes is None:
            return error(503, DISABLED)
        try:
            report = changes()
        except Exception:
            log.exception("changes API: cannot read the latest drift report")
            return error(500, "internal error (see the daemon's log)")
        if report is None:
            retry = str(max(1, round((drift or DriftConfig()).interval)))
            return error(503, no_report_reason(drift), {"Retry-After": retry})
        return await answer(lambda: changes_page(report, query, drift))

    return [web.get(PATH, handler)]
