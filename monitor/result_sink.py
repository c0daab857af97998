"""Where the evaluation's results go, in one place (it was the daemon's glue): each tally applied to the metrics,
and each batch's follow-up work routed to the stage that does it.

`TallyMetrics.apply` is what every producer of results calls (the pool's batches through the sink, the judge and
pairwise stages, the session tracker): the result metrics, the failure signatures', the attributes the workers'
decoding dropped and the evaluation records their exporters settled. `ResultSink.record` is the pool's callback for
a batch: counted by the recorder (traces evaluated, their delay, failures), then its LLM-judge jobs to the judge
stage, its pairwise offers to the pairwise stage and its conversation turns to the session tracker.
"""

from __future__ import annotations

from typing import Any, Protocol

from monitor.engine.recorder import ResultRecorder
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally


class TallyMetrics:
    def __init__(self, metrics: MetricsExporter) -> None:
        self.metrics = metrics

    def apply(self, tally: MetricsTally) -> None:
        """A tally to the result metrics and to the failure signatures' (active, and new without a store)."""
        self.metrics.results.apply_tally(tally)
        self.metrics.signatures.apply_tally(tally)
        if tally.exports:  # the evaluation records the worker's exporter settled (monitor/export)
            self.metrics.exports.add(tally.exports)
        for receiver, count in tally.attributes_dropped.items():  # left out of raw spans by the worker's decoding
            self.metrics.intake.receiver(receiver).attributes_dropped("too_deep", count)


class Submits(Protocol):
    def submit(self, items: list[Any]) -> None: ...


class AddsTurns(Protocol):
    def add(self, turns: list[Any]) -> None: ...


class ResultSink:
    def __init__(
        self,
        recorder: ResultRecorder,
        judges: Submits,
        pairwise: Submits | None,
        sessions: AddsTurns | None,
    ) -> None:
        self.recorder = recorder
        self.judges = judges
        self.pairwise = pairwise
        self.sessions = sessions

    def record(self, tally: MetricsTally) -> None:
        """One evaluated batch: counted and applied, then its follow-up work to the stages."""
        self.recorder.record(tally)
        if tally.judge_jobs:
            self.judges.submit(tally.judge_jobs)
        if tally.pair_offers and self.pairwise is not None:
            self.pairwise.submit(tally.pair_offers)
        if tally.turns and self.sessions is not None:
            self.sessions.add(tally.turns)


__all__ = ["ResultSink", "TallyMetrics"]
