"""docs/metrics.md documents every metric the exporter registers, under its exposed name."""

from __future__ import annotations

from pathlib import Path

from monitor.metrics import MetricsExporter

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_every_exported_metric_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    families = MetricsExporter().registry.collect()  # every family, with or without samples yet
    names = {f"{f.name}_total" if f.type == "counter" else f.name for f in families}
    assert "agent_llm_calls_total" in names and len(names) >= 25
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"not in docs/metrics.md: {missing}"
