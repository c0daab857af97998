"""The first review endpoint, /api/failing, deprecated for /api/v1/results?outcome=fail: now a redirect there.

It reads nothing itself (the v1 handler reads the store on a worker thread, through the review reader), so no
query of the store runs on the event loop. `evaluator` and `limit` keep their meaning: `limit` is clamped to
1..MAX_LIMIT as before (v1 would refuse what lies outside), other parameters are ignored as before. The answer
is a 301: every HTTP client that follows redirects follows a 301 for GET and HEAD, the only methods this path
serves (a 308 promises to keep other methods, which buys nothing here and is not followed by Python's urllib
before 3.11 or Java's HttpURLConnection). Permanent, as the mapping never changes; the port's `Cache-Control:
no-store` on /api answers keeps browsers from caching it all the same. The access rules are the middleware's
(access.py): a client without the right credentials gets its 401/403/429 here, never the redirect, and the
redirect names only the request's own parameters.
"""

from __future__ import annotations

from urllib.parse import urlencode

from aiohttp import web

from monitor.review.api_params import MAX_LIMIT, BadRequest, bounded, parse_int
from monitor.web.openapi import PREFIX

PATH = "/api/failing"
SUCCESSOR = f"{PREFIX}/results"
DEFAULT_LIMIT = 50
DEPRECATED = {"Deprecation": "true", "Link": f'<{SUCCESSOR}?outcome=fail>; rel="successor-version"'}


def successor_url(query: dict[str, str]) -> str:
    """The /api/v1/results URL answering the /api/failing query `query`; BadRequest for a value /api/failing
    refused (overlong, or a `limit` that is not a whole number)."""
    evaluator = bounded("evaluator", query.get("evaluator", ""))
    limit = min(parse_int("limit", query.get("limit", str(DEFAULT_LIMIT)), 0), MAX_LIMIT) or 1
    params = {"outcome": "fail", **({"evaluator": evaluator} if evaluator else {}), "limit": str(limit)}
    return f"{SUCCESSOR}?{urlencode(params)}"


def api_failing_routes() -> list[web.RouteDef]:
    """GET /api/failing: a 301 to its /api/v1/results equivalent (a 400 for a parameter it cannot map)."""

    async def failing(request: web.Request) -> web.Response:
        try:
            location = successor_url(dict(request.query))
        except BadRequest as exc:
            return web.Response(status=400, text=f"{exc}\n", headers=DEPRECATED)
        headers = {**DEPRECATED, "Location": location}
        return web.Response(status=301, text=f"moved to {location}\n", headers=headers)

    return [web.get(PATH, failing)]
