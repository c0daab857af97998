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
