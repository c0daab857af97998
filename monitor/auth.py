"""Bearer-token checks shared by the receivers and the API, and the review page's session cookies."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from typing import Protocol


class Authenticator(Protocol):
    """What a receiver asks before it reads a request (the Collector's `extensionauth.Server` is the model)."""

    def authorized(self, authorization: str | None) -> bool:
        """True when the request's `Authorization` header value is acceptable."""
        ...


class BearerAuth:
    """The receivers' bearer-token check: every request passes when no token is configured."""

    __slots__ = ("token",)

    def __init__(self, token: str | None = None) -> None:
        self.token = token

    def authorized(self, authorization: str | None) -> bool:
        return bearer_authorized(authorization, self.token)


def bearer_authorized(authorization: str | None, token: str | None) -> bool:
    """True when `token` is unset, or `authorization` is `Bearer <token>` (compared in constant time)."""
    if not token:
        return True
    if not authorization or authorization[:7].lower() != "bearer ":
        return False
    offered = authorization[7:].strip().encode("utf-8", "surrogateescape")  # header bytes may be any octets
    return hmac.compare_digest(offered, token.encode())


SESSION_COOKIE = "agent_monitor_session"
SESSION_TTL = 12 * 3600.0  # a review session lasts this long from its login
_SESSION_CONTEXT = b"agent-monitor review session v2"
_SESSION_VERSION = "v2"
_MAX_COOKIE_CHARS = 160  # a session value is about 100 characters


def _mac(token: str, nonce: str, expires: str) -> str:
    message = b"|".join((_SESSION_CONTEXT, nonce.encode(), expires.encode()))
    return hmac.new(token.encode(), message, "sha256").hexdigest()


def session_value(token: str, now: float | None = None, ttl: float = SESSION_TTL) -> str:
    """A new review session for `token`: `v2.<nonce>.<expiry>.<HMAC>`. The cookie never holds the token; every
    replica that shares the token accepts it (no server state), until it expires or is revoked (`RevokedSessions`,
    on logout). Changing the token ends every session."""
    nonce = secrets.token_urlsafe(16)
    expires = str(int((time.time() if now is None else now) + ttl))
    return f"{_SESSION_VERSION}.{nonce}.{expires}.{_mac(token, nonce, expires)}"


def session_nonce(cookie: str | None, token: str | None, now: float | None = None) -> str | None:
    """The nonce of `cookie` when it is an unexpired session of `token` (checked in constant time), else None."""
    if not token or not cookie or len(cookie) > _MAX_COOKIE_CHARS:
        return None
    parts = cookie.split(".")
    if len(parts) != 4 or parts[0] != _SESSION_VERSION:
        return None
    _, nonce, expires, mac = parts
    if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
        return None
    if not hmac.compare_digest(mac.encode("utf-8", "surrogateescape"), _mac(token, nonce, expires).encode()):
        return None
    return nonce if int(expires) > (time.time() if now is None else now) else None


def session_authorized(cookie: str | None, token: str | None, now: float | None = None) -> bool:
    """True when `token` is unset, or `cookie` is an unexpired session of `token` (revocation is the caller's:
    `RevokedSessions`)."""
    return not token or session_nonce(cookie, token, now) is not None


class RevokedSessions:
    """Sessions ended by logout, until they expire: a bounded set of nonces (the oldest revocation is dropped
    past `max_entries`; only a valid session can be revoked, so only real logouts fill it). In memory, per
    process: another replica accepts the session until it expires (SESSION_TTL)."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._until: dict[str, float] = {}  # nonce -> expiry, in revocation order
        self._lock = threading.Lock()

    def revoke(self, nonce: str) -> None:
        """End the session `nonce` (kept until it would have expired at the latest)."""
        with self._lock:
            now = time.time()
            expires = now + SESSION_TTL
            for old in [n for n, until in self._until.items() if until <= now]:
                del self._until[old]
            self._until[nonce] = expires
            while len(self._until) > self.max_entries:
                del self._until[next(iter(self._until))]

    def __contains__(self, nonce: object) -> bool:
        return nonce in self._until

    def __len__(self) -> int:
        return len(self._until)
