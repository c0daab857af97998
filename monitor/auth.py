"""Bearer-token checks shared by the receivers and the API, and the review page's session cookies."""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)


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
    past `max_entries`; only a valid session can be revoked, so only real logouts fill it). With a `path` (the
    daemon's: next to the SQLite store) the set is kept in that file too, so a restart still refuses the
    cookies logged out before it; entries past their expiry are pruned on load and on every logout. Per
    replica: another replica accepts the session until it expires (SESSION_TTL)."""

    def __init__(self, max_entries: int = 10_000, path: Path | None = None) -> None:
        self.max_entries = max_entries
        self.path = path
        self._until: dict[str, float] = {}  # nonce -> expiry, in revocation order
        self._lock = threading.Lock()
        if path is not None:
            self._until = _load_revocations(path, max_entries)

    @classmethod
    def of_store(cls, store_path: str | None) -> RevokedSessions:
        """The daemon's: kept beside the SQLite store's file `store_path` (its data directory), so that a restart
        still refuses them; in memory only without a store (None: the daemon then keeps no state)."""
        return cls(path=Path(store_path).parent / REVOKED_SESSIONS_FILE if store_path is not None else None)

    def revoke(self, nonce: str) -> None:
        """End the session `nonce` (kept until it would have expired at the latest)."""
        with self._lock:
            now = time.time()
            self._until = _unexpired(self._until, now)
            self._until.pop(nonce, None)
            self._until[nonce] = now + SESSION_TTL
            while len(self._until) > self.max_entries:
                del self._until[next(iter(self._until))]
            if self.path is not None:
                _save_revocations(self.path, self._until)

    def __contains__(self, nonce: object) -> bool:
        until = self._until.get(nonce) if isinstance(nonce, str) else None
        return until is not None and until > time.time()

    def __len__(self) -> int:
        return len(self._until)


REVOKED_SESSIONS_FILE = "revoked_sessions.json"  # the daemon's, in the store's data directory
_MAX_REVOCATIONS_FILE = 4 * 1024 * 1024  # 10,000 entries are about 500 KB; a bigger file is not ours


def _unexpired(until: dict[str, float], now: float) -> dict[str, float]:
    return {nonce: expiry for nonce, expiry in until.items() if expiry > now}


def _load_revocations(path: Path, max_entries: int) -> dict[str, float]:
    """The unexpired revocations kept in `path` (the newest `max_entries`); none when it is missing or unreadable
    (a warning: the sessions it held are accepted again until they expire)."""
    try:
        if path.stat().st_size > _MAX_REVOCATIONS_FILE:
            raise ValueError(f"larger than {_MAX_REVOCATIONS_FILE} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("revoked"), dict):
            raise ValueError("not a revocations file")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:
        log.warning("review sessions: cannot read the logouts kept in %s (%s): starting without them", path, exc)
        return {}
    now = time.time()
    kept = {
        nonce: float(expiry)
        for nonce, expiry in data["revoked"].items()
        if isinstance(nonce, str)
        and len(nonce) <= _MAX_COOKIE_CHARS
        and isinstance(expiry, int | float)
        and not isinstance(expiry, bool)
        and now < expiry <= now + SESSION_TTL
    }
    return dict(list(kept.items())[-max_entries:]) if max_entries > 0 else {}


def _save_revocations(path: Path, until: dict[str, float]) -> None:
    """Replace `path` with `until` (atomically: a crash leaves the old file or the new one, never half of one)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".revoked-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"version": 1, "revoked": {n: int(e) for n, e in until.items()}}, out)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        log.warning("review sessions: cannot keep the logout in %s (%s): it holds until a restart only", path, exc)
