"""MetricsExporter: the one Prometheus registry, every component's metric group on it, and /metrics.

Each group is a small class in `monitor/metrics/` that registers its families on the registry and is updated by
one component only (the daemon hands each component its own group, or the group's methods as callbacks):

- `results` (`ResultMetrics`): the evaluation results and traces, label caps, windows, alert states, variant
  comparisons (and the normalizer errors the tallies carry): the result recorder and the judge stages.
- `intake` (`IntakeMetrics`): requests, spans received and refused: each receiver and the poll feed.
- `intake_log` (`IntakeLogMetrics`): the intake log's holdings, replays, releases, syncs and errors: the log.
- `assembly` (`AssemblyMetrics`): traces, spans and bytes held, late and duplicate spans: read from the assembler.
- `evaluation` (`EvaluationMetrics`): traces dropped, worker restarts; queue depth and capacity read from the pool.
- `recording` (`RecordingMetrics`): traces evaluated, completion delay: the result recorder.
- `store` (`StoreMetrics`): store errors and results lost (StoreHealth), review availability read from it.
- `judges`, `pairwise`, `poll` (`JudgeMetrics`, `PairwiseMetrics`, `PollMetrics`): the judge engine, the pairwise
  stage, the poll runners. `build` (`BuildInfo`): the version.
- `signatures` (`SignatureMetrics`): failure signatures counted new (told by the result stores) and active (from
  the tallies): the daemon.
- `sessions` (`SessionMetrics`): conversations open, completed, cut, and their late turns: the session tracker.
- `reviews` (`ReviewMetrics`): reviewers' verdicts written by this process: counted by the daemon's ReviewWriter.
- `rebuild` (`RebuildMetrics`): the start-up rebuild of the windows from the stored results: `WindowRebuild`.
- `drift` (`DriftMetrics`): each agent's signals against its baseline (agent_quality_*) and the drift job's health:
  the drift job's `publish(report, duration)` and `failed(duration)`.
- `attribution` (`AttributionMetrics`): the top factors of each breached evaluator (agent_eval_attribution): the
  attribution job's `publish(factors)` and `failed()`.
- `exports` (`ExportMetrics`): evaluation records sent out over OTLP, by outcome: the tallies, and this process's
  counts taken at each scrape.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, disable_created_metrics

from monitor.alerting.thresholds import AlertRule
from monitor.config import MetricsConfig
from monitor.config.signatures import SignaturesConfig
from monitor.config.variants import VariantsConfig
from monitor.metrics.assembly import AssemblyMetrics
from monitor.metrics.attribution import AttributionMetrics
from monitor.metrics.build import BuildInfo
from monitor.metrics.drift import DriftMetrics
from monitor.metrics.evaluation import EvaluationMetrics
from monitor.metrics.exports import ExportMetrics
from monitor.metrics.exposition import render
from monitor.metrics.intake import IntakeMetrics
from monitor.metrics.intake_log import IntakeLogMetrics
from monitor.metrics.judges import JudgeMetrics
from monitor.metrics.pairwise import PairwiseMetrics
from monitor.metrics.poll import PollMetrics
from monitor.metrics.rebuild import RebuildMetrics
from monitor.metrics.recording import RecordingMetrics
from monitor.metrics.results import ResultMetrics
from monitor.metrics.reviews import ReviewMetrics
from monitor.metrics.sessions import SessionMetrics
from monitor.metrics.signatures import SignatureMetrics
from monitor.metrics.store import StoreMetrics

# The daemon owns its process: counters and histograms expose no `*_created` series (a start time per label set
# that only grows the scrape). prometheus_client reads this process-wide flag at every collection.
disable_created_metrics()


class MetricsExporter:
    """The registry, the metric groups registered on it, and `render()` for /metrics."""

    def __init__(
        self,
        *,
        signatures: SignaturesConfig | None = None,
        store_enabled: bool = True,
        new_signature_range: float | None = None,
        **results: Any,
    ) -> None:
        """`results`: the result metrics' options (`ResultMetrics`: windows, caps, buckets, alert rules, clock,
        variants), each defaulting to the `metrics:` section's default; `signatures`: the failure signatures'
        section (`SignatureMetrics`), whether a store counts new signatures (`store_enabled`; else this process
        does) and the new-signature alert's range (`new_signature_range`; `signatures.window` when not given)."""
        self.registry = r = CollectorRegistry()
        self.results = ResultMetrics(r, **results)
        self.intake = IntakeMetrics(r)
        self.intake_log = IntakeLogMetrics(r)
        self.assembly = AssemblyMetrics(r)
        self.evaluation = EvaluationMetrics(r)
        self.recording = RecordingMetrics(r)
        self.store = StoreMetrics(r)
        self.judges = JudgeMetrics(r)
        self.poll = PollMetrics(r)
        self.pairwise = PairwiseMetrics(r, self.results.variants, self.results.variant_label)
        self.build = BuildInfo(r)
        self.sessions = SessionMetrics(r, self._service_label)
        self.reviews = ReviewMetrics(r)
        self.rebuild = RebuildMetrics(r)
        self.drift = DriftMetrics(r, self.results.service_agent)
        self.attribution = AttributionMetrics(r)
        self.exports = ExportMetrics(r)
        signatures = signatures or SignaturesConfig()
        self.signatures = SignatureMetrics(
            r,
            self.results.evaluator_service,
            window=signatures.window,
            min_count=signatures.min_count,
            decides_new=not store_enabled,
            new_range=new_signature_range,
            clock=results.get("clock", time.time),
        )

    def _service_label(self, service: str) -> str:
        """`service` as the result series label it (sanitised, capped)."""
        return self.results.evaluator_service("", service)[1]

    @classmethod
    def from_config(
        cls,
        config: MetricsConfig,
        thresholds: Mapping[str, AlertRule],
        variants: VariantsConfig,
        signatures: SignaturesConfig | None = None,
        store_enabled: bool = True,
        new_signature_range: float | None = None,
    ) -> MetricsExporter:
        """The metrics of the `metrics:` section, with the evaluators' alert rules, the variants and the failure
        signatures (`signatures:`; `store_enabled`: a store decides which are new; `new_signature_range`: the
        new-signature alert's range)."""
        return cls(
            windows=[(w.label, w.seconds) for w in config.windows],
            window_sample_cap=config.window_sample_cap,
            label_value_cap=config.label_value_cap,
            score_buckets=config.score_buckets,
            duration_buckets=config.duration_buckets,
            cost_buckets=config.cost_buckets,
            thresholds=thresholds,
            variants=variants,
            signatures=signatures,
            store_enabled=store_enabled,
            new_signature_range=new_signature_range,
        )

    def render(self, accept_header: str | None) -> tuple[bytes, str]:
        """The /metrics body and content type: OpenMetrics when the Accept header asks for it."""
        self.exports.collect()
        return render(self.registry, accept_header)
