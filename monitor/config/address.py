"""Where the daemon is: the one place that turns the metrics host, port and TLS (or `api.external_url`) into a
base URL. `external_url` is what browsers and Alertmanager receivers follow (the alerts' links); `local_url` is
what a command on this machine calls (`agent-monitor review`, `health`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import MonitorConfig

WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # listen on every address: reach it at a name of this host instead


def base_url(host: str, port: int, tls: bool, wildcard: str) -> str:
    """`http(s)://host:port` (no trailing slash), with a wildcard host replaced by `wildcard` and an IPv6 address
    in brackets."""
    name = wildcard if host in WILDCARD_HOSTS else host
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    return f"{'https' if tls else 'http'}://{name}:{port}"


def external_url(config: MonitorConfig, bound_port: int | None = None) -> str:
    """The base URL of the review page for people and Alertmanager receivers: `api.external_url`, else the metrics
    port's own address (`localhost` for a wildcard host; https with `api.tls`; `bound_port`: the port the daemon
    bound, for `metrics.port: 0`)."""
    if config.api.external_url:
        return config.api.external_url
    port = config.metrics.port if bound_port is None else bound_port
    return base_url(config.metrics.host, port, config.api.tls.enabled, "localhost")


def local_url(config: MonitorConfig) -> str:
    """The base URL a command on this host calls the daemon at: the metrics port on 127.0.0.1 (or its configured
    host when that is a specific address), https with `api.tls`."""
    return base_url(config.metrics.host, config.metrics.port, config.api.tls.enabled, "127.0.0.1")
