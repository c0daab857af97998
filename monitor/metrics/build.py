"""`agent_monitor_build_info{version}`: always 1, labelled with the daemon's version."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from monitor import __version__


class BuildInfo:
    def __init__(self, registry: CollectorRegistry, version: str = __version__) -> None:
        self.info = Gauge("agent_monitor_build_info", "Build information.", ["version"], registry=registry)
        self.info.labels(version=version).set(1)
