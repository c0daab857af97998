"""`api:` — the review API's access: its bearer token, TLS, who may read trace content without a token, and the
external URL people and Alertmanager reach the review page at."""

from __future__ import annotations

import urllib.parse
from typing import Literal

from pydantic import Field, field_validator

from .security import AuthConfig, TlsConfig
from .units import Section


class ApiConfig(Section):
    """The metrics port's review API and page (/api/..., /review): its bearer token and TLS. /metrics, /healthz,
    /readyz stay open. `allow_unauthenticated`: who reads trace content while no token is configured (api.auth,
    else receivers.auth): `loopback` (clients on this host or in this pod), `any`, or `none`. `external_url`: the
    base URL browsers and Alertmanager receivers use to reach the page (behind a proxy, its public address, with
    any path prefix); empty: the metrics host and port (config/address.py)."""

    auth: AuthConfig = Field(default_factory=AuthConfig)
    tls: TlsConfig = Field(default_factory=TlsConfig)
    allow_unauthenticated: Literal["loopback", "any", "none"] = "loopback"
    external_url: str = ""

    @field_validator("external_url")
    @classmethod
    def _absolute_url(cls, url: str) -> str:
        url = url.strip()
        if not url:
            return ""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"must be an absolute http:// or https:// URL (https://monitor.example.com), got {url!r}")
        try:
            parsed.port  # noqa: B018 - raises on a port that is not a number in range
        except ValueError:
            raise ValueError(f"has an invalid port: {url!r}") from None
        if parsed.query or parsed.fragment or url.endswith(("?", "#")):
            raise ValueError(f"must have no query or fragment (the links add their own), got {url!r}")
        if "{" in url or "}" in url or any(c.isspace() for c in url):
            raise ValueError(f"must be a plain URL without braces or spaces, got {url!r}")
        return url.rstrip("/")
