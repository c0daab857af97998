"""`api:` — the review API's access: its bearer token, TLS, and who may read trace content without a token."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .security import AuthConfig, TlsConfig
from .units import Section


class ApiConfig(Section):
    """The metrics port's review API and page (/api/..., /review): its bearer token and TLS. /metrics, /healthz,
    /readyz stay open. `allow_unauthenticated`: who reads trace content while no token is configured (api.auth,
    else receivers.auth): `loopback` (clients on this host or in this pod), `any`, or `none`."""

    auth: AuthConfig = Field(default_factory=AuthConfig)
    tls: TlsConfig = Field(default_factory=TlsConfig)
    allow_unauthenticated: Literal["loopback", "any", "none"] = "loopback"
