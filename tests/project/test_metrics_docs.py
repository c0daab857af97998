"""docs/metrics.md documents every metric the daemon registers, under its exposed name: the exporter's groups and
the metrics a component registers itself on the daemon's registry."""

from __future__ import annotations

import asyncio
from pathlib import Path

from monitor.config import MonitorConfig
from monitor.daemon import Daemon

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_every_registered_metric_is_documented(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    config = MonitorConfig.model_validate(
        {"store": {"path": str(tmp_path / "results.db")}, "evaluation": {"workers": 1}}
    )
    daemon = Daemon(config)  # built, never started: its registry holds every family already
    try:
        families = daemon.metrics.registry.collect()  # every family, with or without samples yet
        names = {f"{f.name}_total" if f.type == "counter" else f.name for f in families}
    finally:
        asyncio.run(daemon.shutdown(0.5))
    assert {"agent_llm_calls_total", "agent_monitor_event_loop_lag_seconds"} <= names and len(names) >= 25
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"not in docs/metrics.md: {missing}"
