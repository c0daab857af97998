"""MetricsExporter: the private registry, every metric of the contract, and the update methods."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

from monitor import __version__
from monitor.alerting.thresholds import AlertRule, AlertState
from monitor.config.models import DEFAULT_DURATION_BUCKETS, DEFAULT_SCORE_BUCKETS
from monitor.config.variants import VariantsConfig
from monitor.metrics.collector import WindowCollector
from monitor.metrics.exposition import render
from monitor.metrics.intake import IntakeMetrics
from monitor.metrics.judges import JudgeMetrics
from monitor.metrics.labels import OTHER, LabelCapper, clean_label_text, sanitize_label_value
from monitor.metrics.normalizers import NormalizerMetrics
from monitor.metrics.pairwise import PairwiseMetrics
from monitor.metrics.poll import PollMetrics
from monitor.metrics.series import CounterSeries, HistogramSeries, SeriesCollector
from monitor.metrics.tally import MetricsTally, ResultCounts, ResultKey
from monitor.metrics.variant_compare import VariantComparisons, specs_of
from monitor.metrics.windows import WindowStore

DEFAULT_WINDOWS: tuple[tuple[str, float], ...] = (("5m", 300.0), ("1h", 3600.0))
EVALUATION_BUCKETS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
MAX_RESOLVED = 20_000  # cached label resolutions (raw label values); beyond it results take the slow path
RESULT_LABELS = ["evaluator", "level", "service", "agent", "variant"]

# The daemon owns its process: counters and histograms expose no `*_created` series (a start time per label set
# that only grows the scrape). prometheus_client reads this process-wide flag at every collection.
disable_created_metrics()

_TRACE_ID = re.compile(r"[0-9a-f]{32}")


def trace_exemplar(trace_id: str | None) -> dict[str, str] | None:
    """{"trace_id": <32 lowercase hex>} for a valid W3C trace id, else None."""
    if not trace_id:
        return None
    tid = trace_id.strip().lower()
    if not _TRACE_ID.fullmatch(tid) or tid == "0" * 32:
        return None
    return {"trace_id": tid}


class _ResultKey:
    """The label values of one (evaluator, level, service, agent, variant), resolved once, and the keys built
    from them."""

    __slots__ = ("failed", "labels", "name", "passed", "service", "skip", "window_key")

    def __init__(self, labels: tuple[str, str, str, str, str]) -> None:
        self.labels = labels
        self.name = (labels[0],)
        self.service = labels[2]
        self.passed = (*labels, "pass")
        self.failed = (*labels, "fail")
        self.skip = (*labels, "skip")
        self.window_key = (labels[0], labels[2], labels[4])


DROP_REASONS = ("shutdown_timeout", "evaluation_error", "worker_crash", "worker_stalled")
STORE_OPERATIONS = ("write", "prune", "read", "open")
STORE_LOSS_REASONS = ("rejected", "failed", "unavailable", "timeout", "queue_full")


class MetricsExporter:
    """Every metric of the contract in a private registry; `render()` serves /metrics.

    observe_* may run on a worker thread while `render()` runs on the event loop thread.
    """

    def __init__(
        self,
        *,
        windows: Sequence[tuple[str, float]] = DEFAULT_WINDOWS,
        window_sample_cap: int = 10000,
        label_value_cap: int = 50,
        score_buckets: Sequence[float] = DEFAULT_SCORE_BUCKETS,
        duration_buckets: Sequence[float] = DEFAULT_DURATION_BUCKETS,
        thresholds: Mapping[str, AlertRule] | None = None,
        clock: Callable[[], float] = time.time,
        variants: VariantsConfig | None = None,
    ) -> None:
        """`variants`: the comparisons to export (agent_eval_variant_*); their variants are always admitted
        under the `variant` label cap."""
        self.registry = CollectorRegistry()
        self.windows = [(str(label), float(seconds)) for label, seconds in windows]
        labels = [label for label, _ in self.windows]
        if len(set(labels)) != len(labels):
            raise ValueError(f"window labels must be unique, got {labels}")
        self.thresholds = {sanitize_label_value(k): rule for k, rule in (thresholds or {}).items()}
        r = self.registry

        # Evaluation results and agent traces: updated many times per trace, so kept in plain dicts (series.py).
        self.score = HistogramSeries(
            "agent_eval_score", "Score of every scored evaluation result.", RESULT_LABELS, score_buckets
        )
        self.results = CounterSeries(
            "agent_eval_results", "Evaluation results by outcome.", [*RESULT_LABELS, "outcome"]
        )
        self.skips = CounterSeries(
            "agent_eval_skips", "Skipped evaluations by reason.", ["evaluator", "service", "reason"]
        )
        self.evaluation_seconds = HistogramSeries(
            "agent_monitor_evaluation_seconds", "Evaluator run time.", ["evaluator"], EVALUATION_BUCKETS
        )
        self.traces = CounterSeries("agent_traces", "Traces evaluated.", ["service", "status"])
        self.trace_duration = HistogramSeries(
            "agent_trace_duration_seconds", "End-to-end trace latency.", ["service"], duration_buckets
        )
        self.llm_tokens = CounterSeries(
            "agent_llm_tokens", "Tokens used by the agents.", ["service", "model", "direction"]
        )
        self.llm_calls = CounterSeries(
            "agent_llm_calls", "LLM calls by outcome (error: the call's span failed).", ["service", "model", "outcome"]
        )
        self.tool_calls = CounterSeries("agent_tool_calls", "Tool executions.", ["service", "tool", "status"])
        self._series = SeriesCollector(
            self.score,
            self.results,
            self.skips,
            self.traces,
            self.trace_duration,
            self.llm_tokens,
            self.llm_calls,
            self.tool_calls,
            self.evaluation_seconds,
        )
        r.register(self._series)

        # Daemon health. The receivers' own (requests, spans received and refused): each takes its telemetry here.
        self.intake = IntakeMetrics(r)
        self.traces_pending = Gauge("agent_monitor_traces_pending", "Traces held by the assembler.", registry=r)
        self.spans_pending = Gauge("agent_monitor_spans_pending", "Spans held by the assembler.", registry=r)
        self.bytes_pending = Gauge(
            "agent_monitor_bytes_pending", "Estimated bytes of the spans held by the assembler.", registry=r
        )
        self.late_spans = Counter(
            "agent_monitor_late_spans", "Spans arriving after their trace was evaluated.", registry=r
        )
        self.duplicate_spans = Counter("agent_monitor_duplicate_spans", "Spans repeating a span id.", registry=r)
        self.traces_dropped = Counter("agent_monitor_traces_dropped", "Traces not evaluated.", ["reason"], registry=r)
        self.worker_restarts = Counter(
            "agent_monitor_worker_restarts", "Evaluation worker processes replaced after dying.", registry=r
        )
        self.evaluation_capacity = Gauge(
            "agent_monitor_evaluation_capacity_spans",
            "Spans per second the daemon evaluates when saturated, as admission control estimates it.",
            registry=r,
        )
        self.queue_depth = Gauge("agent_monitor_queue_depth", "Traces waiting for evaluation.", registry=r)
        # The known reasons start at 0: `increase()` and `rate()` only see a counter grow after its first scrape,
        # so a series born at 1 would hide the first drop from the dashboards and the health alerts.
        for reason in DROP_REASONS:
            self.traces_dropped.labels(reason=reason)
        self.label_overflow = Counter(
            "agent_monitor_label_overflow", "Label values folded into __other__.", ["label"], registry=r
        )
        self.traces_evaluated = Counter(
            "agent_monitor_traces_evaluated", "Traces run through the evaluators.", registry=r
        )
        self.completion_delay = Histogram(
            "agent_monitor_trace_delay_seconds",
            "From the last span of a trace arriving to its metrics being updated (includes the quiet period).",
            buckets=(0.5, 1, 2, 3, 4, 5, 5.25, 5.5, 6, 7, 10, 15, 30, 60, 120, 300),
            registry=r,
        )
        # The result store degrades instead of stopping anything: its failures are counted here.
        self.store_errors = Counter(
            "agent_monitor_store_errors",
            "Result store operations that failed (rows not stored, retention not kept, reads not answered).",
            ["operation"],
            registry=r,
        )
        for operation in STORE_OPERATIONS:
            self.store_errors.labels(operation=operation)
        self.store_results_lost = Counter(
            "agent_monitor_store_results_lost",
            "Evaluation results the result store could not keep (their metrics are counted all the same).",
            ["reason"],
            registry=r,
        )
        for reason in STORE_LOSS_REASONS:
            self.store_results_lost.labels(reason=reason)
        self.review_available = Gauge(
            "agent_monitor_review_available",
            "1 while the result store works (the review can be used), 0 while it is failing or disabled.",
            registry=r,
        )
        self._resolved: dict[ResultKey, _ResultKey] = {}
        self._capped_values: dict[tuple[str, object], str] = {}
        self.judges = JudgeMetrics(r)
        self.poll = PollMetrics(r)
        self.normalizers = NormalizerMetrics(r)
        self.build_info = Gauge("agent_monitor_build_info", "Build information.", ["version"], registry=r)
        self.build_info.labels(version=__version__).set(1)

        self._cap = LabelCapper(label_value_cap, lambda label: self.label_overflow.labels(label=label).inc())
        self._store = WindowStore(
            (seconds for _, seconds in self.windows),
            window_sample_cap,
            clock,
            extra_windows=self._alert_windows,
        )
        self._collector = WindowCollector(self._store, self.windows, self.thresholds, clock)
        r.register(self._collector)
        variants = variants or VariantsConfig()
        for entry in [*variants.compare, *variants.pairwise]:
            for value in (entry.baseline, entry.candidate):
                self.variant_label(value)  # configured variants come first under the cap
        self.comparisons = VariantComparisons(self._store, specs_of(variants, sanitize_label_value, self.variant_label))
        r.register(self.comparisons)
        self.pairwise = PairwiseMetrics(r, variants, self.variant_label)

    def _alert_windows(self, evaluator: str) -> list[float]:
        """The windows `evaluator`'s results are kept for besides the exported ones: its alert rule's, and those
        of its variant comparisons."""
        rule = self.thresholds.get(evaluator)
        return ([rule.window_seconds] if rule is not None else []) + self.comparisons.windows_of(evaluator)

    def _capped(self, label: str, value: object) -> str:
        """`self._cap(label, value)`, remembered for admitted values (a folded value is counted every time)."""
        key = (label, value)
        capped = self._capped_values.get(key)
        if capped is None:
            capped = self._cap(label, value)
            if capped != OTHER and len(self._capped_values) < MAX_RESOLVED:
                self._capped_values[key] = capped
        return capped

    def apply_tally(self, tally: MetricsTally) -> None:
        """Record a batch's traces and results (see tally.py); each distinct label value is resolved (and, when
        folded into __other__, counted as overflow) once per tally."""
        resolved: dict[tuple[str, object], str] = {}

        def capped(label: str, value: object) -> str:
            name = resolved.get((label, value))
            if name is None:
                name = resolved[(label, value)] = self._capped(label, value)
            return name

        with self._series.lock:
            for (service, has_error), (count, trace_id) in tally.traces.items():
                exemplar = trace_exemplar(trace_id) if has_error else None
                self.traces.inc((capped("service", service), "error" if has_error else "ok"), count, exemplar)
            for service, seconds, trace_id in tally.durations:
                self.trace_duration.observe((capped("service", service),), seconds, trace_exemplar(trace_id))
            for (service, model, direction), tokens in tally.tokens.items():
                self.llm_tokens.inc((capped("service", service), capped("model", model), direction), tokens)
            for (service, model, ok), calls in tally.llm_calls.items():
                self.llm_calls.inc((capped("service", service), capped("model", model), "ok" if ok else "error"), calls)
            for (service, tool, ok), calls in tally.tools.items():
                self.tool_calls.inc((capped("service", service), capped("tool", tool), "ok" if ok else "error"), calls)
            samples = self._apply_results(tally.results, capped)
        self.normalizers.add(tally.normalizer_errors)
        if samples:
            self._store.add_many(samples)

    def _apply_results(
        self, results: Mapping[ResultKey, ResultCounts], capped: Callable[[str, object], str]
    ) -> list[tuple[tuple[str, str, str], Any, bool]]:
        """Counters and histograms of every result label set (under the series lock); the window samples."""
        window_samples: list[tuple[tuple[str, str, str], Any, bool]] = []
        counters, score, skips, seconds = self.results, self.score, self.skips, self.evaluation_seconds
        for raw, counts in results.items():
            key = self._result_key(raw)
            for elapsed in counts.durations:
                seconds.observe(key.name, elapsed)
            skipped = sum(counts.skips.values())
            if skipped:
                counters.inc(key.skip, skipped)
                for reason, n in counts.skips.items():
                    skips.inc((key.name[0], key.service, capped("reason", reason)), n)
            if counts.passed:
                counters.inc(key.passed, counts.passed)
            if counts.failed:
                counters.inc(key.failed, counts.failed, exemplar=trace_exemplar(counts.failed_trace))
            labels, window_key = key.labels, key.window_key
            for value, passed, failed_trace in counts.samples:
                if value is not None:
                    score.observe(labels, value, exemplar=None if passed else trace_exemplar(failed_trace))
                window_samples.append((window_key, value, passed))
        return window_samples

    def _result_key(self, raw: ResultKey) -> _ResultKey:
        key = self._resolved.get(raw)
        if key is not None:
            return key
        evaluator, level, service, agent, variant = raw
        name = sanitize_label_value(evaluator)
        svc = self._cap("service", service)
        lvl = sanitize_label_value(level)
        agent_label = self._agent_label(lvl, agent)
        variant_label = self.variant_label(variant)
        key = _ResultKey((name, lvl, svc, agent_label, variant_label))
        # A value folded into __other__ is resolved again each time, so every occurrence is counted as overflow.
        if OTHER not in (svc, agent_label, variant_label) and len(self._resolved) < MAX_RESOLVED:
            self._resolved[raw] = key
        return key

    def variant_label(self, variant: str) -> str:
        """The capped variant; empty for no variant (variants off, or the trace lacks the attribute)."""
        text = clean_label_text(variant)
        return self._cap("variant", text) if text else ""

    def _agent_label(self, level: str, agent: str | None) -> str:
        """The capped agent name at agent level; empty at trace and llm level and for an unnamed agent."""
        name = clean_label_text(agent) if level == "agent" else ""
        return self._cap("agent", name) if name else ""

    def count_store_errors(self, operation: str, count: int = 1) -> None:
        """A result store failure (StoreHealth's `on_error`)."""
        self.store_errors.labels(operation=operation).inc(count)

    def count_store_results_lost(self, reason: str, count: int) -> None:
        """Results the result store could not keep (StoreHealth's `on_lost`)."""
        self.store_results_lost.labels(reason=reason).inc(count)

    def set_review_available(self, available: bool) -> None:
        """The result store's state (StoreHealth's `on_change`)."""
        self.review_available.set(1 if available else 0)

    def alert_states(self) -> list[AlertState]:
        """(evaluator, service, alert, active, pass_ratio, samples) for every rule and service seen for it."""
        return self._collector.alert_states()

    def window_totals(self, evaluator: str) -> list[tuple[str, int, int]]:
        """(window label, passed, verdicts) of `evaluator` (its configured label) per window, over all services."""
        return self._collector.window_totals(sanitize_label_value(evaluator))

    def window_totals_by_variant(self, evaluator: str) -> dict[str, list[tuple[str, int, int]]]:
        """`window_totals` per variant (its label value) of `evaluator`, for the variants it has results of."""
        return self._collector.window_totals_by_variant(sanitize_label_value(evaluator))

    def alert_levels(self) -> dict[str, str]:
        """The worst alert state over services of every evaluator with a rule, by metric label: "firing",
        "pending" or "inactive" (also before any result). Advances the `for` bookkeeping as a scrape does."""
        rank = {"inactive": 0, "pending": 1, "firing": 2}
        levels = dict.fromkeys(self.thresholds, "inactive")
        for state in self.alert_states():
            level = "firing" if state.active else "pending" if state.pending else "inactive"
            if rank[level] > rank[levels.get(state.evaluator, "inactive")]:
                levels[state.evaluator] = level
        return levels

    def render(self, accept_header: str | None) -> tuple[bytes, str]:
        """The /metrics body and content type: OpenMetrics when the Accept header asks for it."""
        return render(self.registry, accept_header)
