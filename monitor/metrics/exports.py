"""The evaluation export's metric, `agent_monitor_evaluation_exports_total{outcome}`: `gen_ai.evaluation.result`
records sent over OTLP (`exported`), dropped because the exporter's queue was full or at shutdown (`dropped`), or
whose export failed (`failed`). Each process counts its own (monitor/export/counts.py): a worker's counts travel in
its batch tallies, the main process's are taken at each scrape (`observe`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter

from monitor.export.counts import OUTCOMES


class ExportMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.records = Counter(
            "agent_monitor_evaluation_exports",
            "Evaluation results sent out as OTLP gen_ai.evaluation.result log records, by outcome.",
            ["outcome"],
            registry=registry,
        )
        for outcome in OUTCOMES:  # at 0 from the start, so that increase() sees the first one
            self.records.labels(outcome=outcome)
        self._take: Callable[[], Mapping[str, int]] | None = None

    def add(self, counts: Mapping[str, int]) -> None:
        """Count records by outcome (a tally's `exports`); unknown outcomes are ignored."""
        for outcome, count in counts.items():
            if count > 0 and outcome in OUTCOMES:
                self.records.labels(outcome=outcome).inc(count)

    def observe(self, take: Callable[[], Mapping[str, int]]) -> None:
        """Count what `take()` (this process's `EXPORTS.take`) returns at each scrape (`collect`)."""
        self._take = take

    def collect(self) -> None:
        """Before a scrape: the counts this process took since the last one."""
        if self._take is not None:
            self.add(self._take())
