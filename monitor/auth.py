"""Bearer-token checks shared by the receivers and the API."""

from __future__ import annotations

import hmac


def bearer_authorized(authorization: str | None, token: str | None) -> bool:
    """True when `token` is unset, or `authorization` is `Bearer <token>` (compared in constant time)."""
    if not token:
        return True
    if not authorization or authorization[:7].lower() != "bearer ":
        return False
    offered = authorization[7:].strip().encode("utf-8", "surrogateescape")  # header bytes may be any octets
    return hmac.compare_digest(offered, token.encode())


SESSION_COOKIE = "agent_monitor_session"
_SESSION_CONTEXT = b"agent-monitor review session v1"


def session_value(token: str) -> str:
    """The review page's session cookie for `token`: derived from it (HMAC), so the cookie never holds the token
    itself, and the same for every replica that shares the token. Changing the token ends every session."""
    return hmac.new(token.encode(), _SESSION_CONTEXT, "sha256").hexdigest()


def session_authorized(cookie: str | None, token: str | None) -> bool:
    """True when `token` is unset, or `cookie` is the session value of `token` (constant-time comparison)."""
    if not token:
        return True
    if not cookie:
        return False
    return hmac.compare_digest(cookie.encode("utf-8", "surrogateescape"), session_value(token).encode())
