"""Who may read trace content on the metrics port (/review, /api): the auth middleware and its policy.

/metrics, /healthz, /readyz, the OpenAPI document, the login form and the stylesheet are open to all. The rest
holds trace content: with a token configured it needs `Authorization: Bearer <token>` or a review session (the
login form's cookie, monitor/auth.py); without one, `api.allow_unauthenticated` says who reads it anyway:
`loopback` (the default: clients on this host or in this pod), `any`, or `none`. Wrong bearer tokens and wrong
login tokens are limited per client with exponential backoff (429 with Retry-After).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from monitor.auth import SESSION_COOKIE, RevokedSessions, bearer_authorized, session_nonce
from monitor.logutil import RateLimitedLogger
from monitor.web.health import OPEN_PATHS, OPEN_PREFIXES
from monitor.web.peers import GuessLimiter, client_key, is_loopback

log = logging.getLogger(__name__)
_limited = RateLimitedLogger(log, per_minute=6)

AccessMode = Literal["loopback", "any", "none"]
Refuse = Literal["unauthorized", "forbidden", "throttled"]
AnswerFactory = Callable[[web.Request, int, str, dict[str, str]], web.StreamResponse]
UNAUTHORIZED = "missing or invalid bearer token"
TOKEN_HINT = "set a token: api.auth.bearer_token_file (or AGENT_MONITOR_API__AUTH__BEARER_TOKEN_FILE)"


@dataclass
class Access:
    """The metrics port's access policy: the token (None: none configured), who reads trace content without
    one, the guess limiter and the sessions ended by logout."""

    token: str | None
    unauthenticated: AccessMode = "loopback"
    limiter: GuessLimiter = field(default_factory=GuessLimiter)
    revoked: RevokedSessions = field(default_factory=RevokedSessions)

    def session(self, cookie: str | None) -> str | None:
        """The nonce of a valid, unrevoked session of the token; None otherwise (and always without a token)."""
        nonce = session_nonce(cookie, self.token)
        return nonce if nonce is not None and nonce not in self.revoked else None

    def open_without_token(self, remote: str | None) -> bool:
        """Without a token: may this peer read trace content?"""
        return self.unauthenticated == "any" or (self.unauthenticated == "loopback" and is_loopback(remote))

    def refusal(self) -> str:
        """Why a peer without a token is refused (no token configured)."""
        if self.unauthenticated == "none":
            return (
                f"trace content is closed: no token is configured and api.allow_unauthenticated is none; {TOKEN_HINT}"
            )
        return (
            "trace content is served to loopback clients only while no token is configured: "
            f"{TOKEN_HINT}, or api.allow_unauthenticated: any to open it to every client"
        )

    def summary(self, where: str) -> str:
        """One start-up line: what of the port at `where` is open to whom, and how to change it."""
        open_part = f"/metrics, /healthz and /readyz on {where} are open to all"
        if self.token:
            return f"{open_part}; /review and /api need the API token (api.auth, else receivers.auth)"
        if self.unauthenticated == "any":
            return f"{open_part}; /review and /api are open to ANY client without a token (allow_unauthenticated: any)"
        if self.unauthenticated == "none":
            return f"{open_part}; /review and /api are closed: no token is configured; {TOKEN_HINT}"
        return (
            f"{open_part}; /review and /api (trace content) answer loopback clients only, as no token is configured; "
            f"{TOKEN_HINT}, or set api.allow_unauthenticated: any"
        )

    def too_many(self, remote: str | None) -> int:
        """Seconds the peer must wait after too many wrong tokens (0: it may try)."""
        return self.limiter.retry_after(client_key(remote)) if self.token else 0

    def try_token(self, remote: str | None, right: Callable[[], bool]) -> tuple[bool, int]:
        """One token check of the peer (`right()`: is the token it offered the token?), atomically: the limit
        checked and a wrong token counted in one step, with no await between (GuessLimiter.attempt), so
        concurrent guesses cannot all pass the check. (True, 0) when right; else (False, the seconds the peer
        must wait, 0 while within its free failures). A throttled peer's token is not even compared."""
        key = client_key(remote)
        ok, wait = self.limiter.attempt(key, right)
        if not ok and wait:
            _limited.warning("guesses", "metrics port: too many wrong tokens from %s: refused for %d s", key, wait)
        return ok, wait


def is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


def check(access: Access, request: web.BaseRequest) -> tuple[Refuse | None, int]:
    """(None, 0) when the request may go on; else why not and, when throttled, the seconds to wait."""
    if is_open(request.path):
        return None, 0
    if not access.token:
        return (None, 0) if access.open_without_token(request.remote) else ("forbidden", 0)
    wait = access.too_many(request.remote)
    if wait:
        return "throttled", wait
    authorization = request.headers.get("Authorization")
    if authorization is not None:  # a guess: checked and, when wrong, counted
        ok, wait = access.try_token(request.remote, lambda: bearer_authorized(authorization, access.token))
        if ok:
            return None, 0
        return ("throttled", wait) if wait else ("unauthorized", 0)
    # A session cookie is an HMAC, not worth guessing: a bad one (expired, revoked) is no credential, uncounted.
    if access.session(request.cookies.get(SESSION_COOKIE)) is not None:
        return None, 0
    return "unauthorized", 0


def access_control(access: Access, answer: AnswerFactory) -> Middleware:
    """The middleware enforcing `access`; `answer(request, status, message, headers)` builds the refusals."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused, wait = check(access, request)
        if refused is None:
            return await handler(request)
        if refused == "forbidden":
            return answer(request, 403, access.refusal(), {})
        if refused == "throttled":
            message = f"too many wrong tokens from this client: retry in {wait} s"
            return answer(request, 429, message, {"Retry-After": str(wait)})
        return answer(request, 401, UNAUTHORIZED, {"WWW-Authenticate": 'Bearer realm="agent-monitor"'})

    return middleware
