"""Drift detection's metrics: each (service, agent)'s signals against its own baseline, from the latest
`DriftReport` (monitor/detection/model.py), and the drift job's own health.

- `agent_quality_baseline{service,agent,signal,subject,baseline}` and `agent_quality_recent{...}`: the windows'
  means (`baseline` is the baseline's kind: `same_hours` or `trailing`);
- `agent_quality_drift{...,kind,direction}`: |effect| in the significant direction (points for unit-scale
  signals, relative for magnitudes), 0 in the other direction and when nothing is significant; both directions of
  every signal with a baseline, so series do not come and go with the changes;
- `agent_quality_drift_active{...,kind}` (1: a quality signal worse, a behaviour signal changed) and
  `agent_quality_drift_since_timestamp_seconds{...,kind}` (when the active change was first seen; 0 otherwise);
- `agent_quality_samples{...,window}`: the items in the `recent` and `baseline` windows;
- `agent_monitor_drift_report_timestamp_seconds` (the report's `as_of`), `_duration_seconds`,
  `agent_monitor_drift_signals_tested` and `agent_monitor_drift_report_failures_total`.

`publish(report, duration)` is called by the drift job (any thread): the samples are prepared there and swapped in
under a lock, so a scrape only copies them out (a report's 8 series a signal cost /metrics what as many result
series do: tests/bench/bench_drift_scrape.py). An incomplete report (`complete=False`: a read of the store failed
or was cut) and `failed()` (the job raised) count a failure and leave the last good report exported.

Label values are cleaned like the result series' (labels.py): `service` and `agent` through the result metrics'
own caps (`labels`), `signal` and `subject` cleaned (a subject is "" when the signal has none). The report bounds
its agents and subjects (`drift.max_agents`, `drift.max_subjects`); at most `MAX_SIGNALS` signals are exported,
active ones and the largest effects first, and two signals that read the same label values after cleaning and
capping (values folded into `__other__`) export the first only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from monitor.detection.model import Direction, DriftReport, SignalState
from monitor.metrics.labels import clean_label_text, sanitize_label_value

MAX_SIGNALS = 20_000  # signals exported from one report (the report's own bounds come first)
SIGNAL_LABELS = ("service", "agent", "signal", "subject")
Labels = Callable[[str, str], tuple[str, str]]  # raw (service, agent) → their label values, capped

_FAMILIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("agent_quality_baseline", "A signal's mean over its baseline (baseline: same_hours or trailing).", ("baseline",)),
    ("agent_quality_recent", "A signal's mean over the recent window (drift.recent).", ()),
    (
        "agent_quality_drift",
        "A signal's significant change from its baseline in `direction` (points for ratios and scores, relative "
        "for the others); 0 when not significant that way.",
        ("kind", "direction"),
    ),
    (
        "agent_quality_drift_active",
        "1 while a quality signal is significantly worse than its baseline, or a behaviour signal changed either way.",
        ("kind",),
    ),
    (
        "agent_quality_drift_since_timestamp_seconds",
        "When the active change was first seen significant (epoch seconds); 0 while not active.",
        ("kind",),
    ),
    ("agent_quality_samples", "The items of a signal in the recent and baseline windows.", ("window",)),
)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """One report's samples, by family name (built once, at `publish`), and the report's own gauges."""

    samples: dict[str, list[Sample]] = field(default_factory=dict)
    as_of: float = 0.0
    tested: int = 0


class DriftMetrics(Collector):
    """`publish` (the drift job's reports), `failed`, and the agent_quality_* families at scrape time."""

    def __init__(
        self, registry: CollectorRegistry, labels: Labels | None = None, max_signals: int = MAX_SIGNALS
    ) -> None:
        """`labels`: the result metrics' label values of (service, agent) (sanitised, capped); by default cleaned
        only."""
        self._labels = labels or _cleaned
        self.max_signals = max_signals
        self.failures = Counter(
            "agent_monitor_drift_report_failures",
            "Drift reports that failed to read the store (the last good report stays exported).",
            registry=registry,
        )
        self._lock = threading.Lock()
        self._snapshot = _Snapshot()
        self._label_sets: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}  # shared, never changed
        self._duration = 0.0
        registry.register(self)

    def publish(self, report: DriftReport, duration: float | None = None) -> None:
        """The drift job's report (any thread); `duration`: the seconds it took. An incomplete report counts a
        failure and is not exported."""
        if not report.complete:
            self.failed(duration)
            return
        snapshot = self._prepare(report)
        with self._lock:
            self._snapshot = snapshot
            if duration is not None:
                self._duration = duration

    def failed(self, duration: float | None = None) -> None:
        """A report that could not be made (the store could not be read): counted; the last good one stays."""
        self.failures.inc()
        if duration is not None:
            with self._lock:
                self._duration = duration

    def _prepare(self, report: DriftReport) -> _Snapshot:
        samples: dict[str, list[tuple[tuple[str, ...], float]]] = {name: [] for name, _, _ in _FAMILIES}
        seen: set[tuple[str, ...]] = set()
        ranked = sorted(report.signals, key=lambda s: (not s.active, -abs(s.effect)))
        for state in ranked:
            key = self._key(state)
            if key in seen:
                continue
            if len(seen) >= self.max_signals:
                break
            seen.add(key)
            _add(samples, key, state)
        built = {}
        known, self._label_sets = self._label_sets, {}  # a signal's labels are the same from report to report
        for name, _, extra in _FAMILIES:
            labelnames = (*SIGNAL_LABELS, *extra)
            rows = []
            for labels, value in sorted(samples[name]):
                label_set = known.get((name, labels))
                if label_set is None:
                    label_set = dict(zip(labelnames, labels, strict=True))
                self._label_sets[(name, labels)] = label_set
                rows.append(Sample(name, label_set, value))
            built[name] = rows
        return _Snapshot(built, report.as_of, report.tested)

    def _key(self, state: SignalState) -> tuple[str, ...]:
        service, agent = self._labels(state.service, state.agent)
        return service, agent, sanitize_label_value(state.signal), clean_label_text(state.subject)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snapshot, duration = self._snapshot, self._duration
        for name, documentation, extra in _FAMILIES:
            family = GaugeMetricFamily(name, documentation, labels=[*SIGNAL_LABELS, *extra])
            family.samples = list(snapshot.samples.get(name, ()))  # built at publish: a scrape copies them out
            yield family
        yield _gauge("agent_monitor_drift_report_timestamp_seconds", "The last drift report's time.", snapshot.as_of)
        yield _gauge("agent_monitor_drift_report_duration_seconds", "How long the last drift report took.", duration)
        yield _gauge(
            "agent_monitor_drift_signals_tested",
            "Signals the last drift report tested (the family its false discovery rate is controlled over).",
            snapshot.tested,
        )


def _add(samples: dict[str, list[tuple[tuple[str, ...], float]]], key: tuple[str, ...], state: SignalState) -> None:
    """The samples of one signal."""
    kind = state.kind.value
    baseline, recent = state.baseline.mean, state.recent.mean
    if baseline is not None:
        samples["agent_quality_baseline"].append(((*key, state.baseline_kind.value), baseline))
        for direction in (Direction.UP, Direction.DOWN):
            moved = state.significant and state.direction is direction
            samples["agent_quality_drift"].append(((*key, kind, direction.value), abs(state.effect) if moved else 0.0))
        samples["agent_quality_drift_active"].append(((*key, kind), 1.0 if state.active else 0.0))
        since = state.since if state.active and state.since is not None else 0.0
        samples["agent_quality_drift_since_timestamp_seconds"].append(((*key, kind), since))
    if recent is not None:
        samples["agent_quality_recent"].append((key, recent))
    samples["agent_quality_samples"].append(((*key, "recent"), float(state.recent.n)))
    samples["agent_quality_samples"].append(((*key, "baseline"), float(state.baseline.n)))


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _cleaned(service: str, agent: str) -> tuple[str, str]:
    return sanitize_label_value(service), clean_label_text(agent)
