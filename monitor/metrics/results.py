"""The evaluation results and the agents' traces: the `agent_eval_*` and `agent_*` series, their label caps, the
exact windows, the in-process alert states and the variant comparisons, in one place.

Every tally of evaluated traces and results (`monitor.metrics.tally.MetricsTally`) comes here through
`apply_tally`: from the result recorder (the workers' batches) and from the judge and pairwise stages (their
verdicts). Label values are sanitised and capped here and nowhere else; a value folded into `__other__` is counted
in `agent_monitor_label_overflow_total{label}`. `apply_tally` may run on a worker thread while /metrics is
rendered on the event loop thread.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from evaluators.pricing import TOKEN_KINDS
from monitor.alerting.thresholds import AlertRule, AlertState
from monitor.config.metrics import MetricsConfig
from monitor.config.variants import VariantsConfig
from monitor.metrics.collector import WindowCollector
from monitor.metrics.labels import OTHER, LabelCapper, clean_label_text, sanitize_label_value
from monitor.metrics.normalizers import NormalizerMetrics
from monitor.metrics.series import CounterSeries, HistogramSeries, SeriesCollector
from monitor.metrics.tally import MetricsTally, ResultCounts, ResultKey, finite
from monitor.metrics.variant_compare import VariantComparisons, specs_of
from monitor.metrics.windows import WindowStore

_DEFAULTS = MetricsConfig()  # the options' defaults are the `metrics:` section's
DEFAULT_WINDOWS: tuple[tuple[str, float], ...] = tuple((w.label, w.seconds) for w in _DEFAULTS.windows)
EVALUATION_BUCKETS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
MAX_RESOLVED = 20_000  # cached label resolutions (raw label values); beyond it results take the slow path
RESULT_LABELS = ["evaluator", "level", "service", "agent", "variant"]
# agent_eval_results_total{source}: the daemon's own evaluators, or an application's (gen_ai.evaluation.result)
SOURCE_DAEMON, SOURCE_EXTERNAL = "daemon", "external"

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
# The (direction, kind) labels of each token kind, in `evaluators.pricing.TOKEN_KINDS` order.
_KINDS = tuple(("output" if kind in ("output", "reasoning") else "input", kind) for kind in TOKEN_KINDS)
WindowSample = tuple[tuple[str, str, str], Any, bool]


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

    def __init__(self, labels: tuple[str, str, str, str, str], source: str = SOURCE_DAEMON) -> None:
        self.labels = labels
        self.name = (labels[0],)
        self.service = labels[2]
        self.passed = (*labels, "pass", source)
        self.failed = (*labels, "fail", source)
        self.skip = (*labels, "skip", source)
        self.window_key = (labels[0], labels[2], labels[4])


class _Series:
    """The result and trace series: updated many times per trace, so kept in plain dicts (series.py)."""

    def __init__(
        self, score_buckets: Sequence[float], duration_buckets: Sequence[float], cost_buckets: Sequence[float]
    ) -> None:
        self.score = HistogramSeries(
            "agent_eval_score", "Score of every scored evaluation result.", RESULT_LABELS, score_buckets
        )
        self.results = CounterSeries(
            "agent_eval_results",
            "Evaluation results by outcome (source: the daemon's evaluators, or external ones: an application's "
            "gen_ai.evaluation.result events).",
            [*RESULT_LABELS, "outcome", "source"],
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
            "agent_llm_tokens",
            "Tokens used by the agents, by kind (disjoint parts: input, cache_read, cache_write of the input "
            "direction; output, reasoning of the output direction).",
            ["service", "agent", "model", "direction", "kind"],
        )
        self.llm_cost = CounterSeries(
            "agent_llm_cost_usd", "What the agents' LLM calls cost, in USD.", ["service", "agent", "model", "provider"]
        )
        self.unpriced_calls = CounterSeries(
            "agent_llm_unpriced_calls",
            "LLM calls with token usage but no known price (not in agent_llm_cost_usd_total).",
            ["service", "model"],
        )
        self.trace_cost = HistogramSeries(
            "agent_trace_cost_usd", "What each trace with a priced LLM call cost, in USD.", ["service"], cost_buckets
        )
        self.llm_calls = CounterSeries(
            "agent_llm_calls", "LLM calls by outcome (error: the call's span failed).", ["service", "model", "outcome"]
        )
        self.tool_calls = CounterSeries("agent_tool_calls", "Tool executions.", ["service", "tool", "status"])

    def collector(self) -> SeriesCollector:
        return SeriesCollector(
            self.score,
            self.results,
            self.skips,
            self.traces,
            self.trace_duration,
            self.llm_tokens,
            self.llm_cost,
            self.unpriced_calls,
            self.trace_cost,
            self.llm_calls,
            self.tool_calls,
            self.evaluation_seconds,
        )


class ResultMetrics:
    """The evaluation results' and traces' series, label caps, windows, alert states and variant comparisons."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        windows: Sequence[tuple[str, float]] = DEFAULT_WINDOWS,
        window_sample_cap: int = _DEFAULTS.window_sample_cap,
        label_value_cap: int = _DEFAULTS.label_value_cap,
        score_buckets: Sequence[float] = tuple(_DEFAULTS.score_buckets),
        duration_buckets: Sequence[float] = tuple(_DEFAULTS.duration_buckets),
        cost_buckets: Sequence[float] = tuple(_DEFAULTS.cost_buckets),
        thresholds: Mapping[str, AlertRule] | None = None,
        clock: Callable[[], float] = time.time,
        variants: VariantsConfig | None = None,
    ) -> None:
        """`variants`: the comparisons to export (agent_eval_variant_*); their variants are always admitted
        under the `variant` label cap."""
        self.windows = [(str(label), float(seconds)) for label, seconds in windows]
        labels = [label for label, _ in self.windows]
        if len(set(labels)) != len(labels):
            raise ValueError(f"window labels must be unique, got {labels}")
        self.thresholds = {sanitize_label_value(k): rule for k, rule in (thresholds or {}).items()}
        self.series = _Series(score_buckets, duration_buckets, cost_buckets)
        self._collected = self.series.collector()
        registry.register(self._collected)
        self.label_overflow = Counter(
            "agent_monitor_label_overflow", "Label values folded into __other__.", ["label"], registry=registry
        )
        self._resolved: dict[ResultKey, _ResultKey] = {}
        self._external: set[str] = set()  # the evaluator labels of external results (source="external")
        self._capped_values: dict[tuple[str, object], str] = {}
        self.normalizers = NormalizerMetrics(registry)  # their errors travel in the tallies
        self._clock = clock
        self._replay_at: float | None = None  # the stored results' time while they are replayed (`replay`)
        self._cap = LabelCapper(label_value_cap, self._overflowed)
        self._store = WindowStore(
            (seconds for _, seconds in self.windows), window_sample_cap, self._now, extra_windows=self._alert_windows
        )
        self._collector = WindowCollector(self._store, self.windows, self.thresholds, self._now)
        registry.register(self._collector)
        self.variants = variants = variants or VariantsConfig()
        for entry in [*variants.compare, *variants.pairwise]:
            for value in (entry.baseline, entry.candidate):
                self.variant_label(value)  # configured variants come first under the cap
        self.comparisons = VariantComparisons(self._store, specs_of(variants, sanitize_label_value, self.variant_label))
        registry.register(self.comparisons)

    def _now(self) -> float:
        """The windows' and the alert states' clock: the replayed results' time during `replay`."""
        at = self._replay_at
        return self._clock() if at is None else at

    def _overflowed(self, label: str) -> None:
        if self._replay_at is None:  # a counter: a replay of stored results counts nothing again
            self.label_overflow.labels(label=label).inc()

    def rebuild_span(self) -> float:
        """How far back the windows and the alert states reach: the longest window (exported, an alert's or a
        variant comparison's), an alert's window and `for` together (the breach it has lasted)."""
        spans = [seconds for _, seconds in self.windows]
        spans += [rule.window_seconds + rule.for_seconds for rule in self.thresholds.values()]
        spans += [spec.window_seconds for spec in self.comparisons.specs]
        return max(spans)

    def replay(self, at: float, results: Iterable[tuple[ResultKey, object, bool]], alerts: bool = True) -> None:
        """Stored results evaluated at `at` (raw (evaluator, level, service, agent, variant), score, passed) into
        the windows as if recorded then, labelled and capped as live results are (`_result_key`), no counter nor
        histogram touched; with `alerts`, the alert states advanced at `at` as a scrape then would have. For the
        start-up rebuild (rebuild.py): in time order, before any live result and any reader."""
        self._replay_at = at
        try:
            samples = [(self._result_key(raw).window_key, finite(score), passed) for raw, score, passed in results]
            if samples:
                self._store.add_many(samples)
            if alerts:
                self._collector.alert_states()
        finally:
            self._replay_at = None

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

        if tally.external:
            self._add_external(tally.external)
        with self._collected.lock:
            self._apply_traces(tally, capped)
            samples = self._apply_results(tally.results, capped)
        self.normalizers.add(tally.normalizer_errors)
        if samples:
            self._store.add_many(samples)

    def _apply_traces(self, tally: MetricsTally, capped: Callable[[str, object], str]) -> None:
        """The trace series of a tally (under the series lock)."""
        s = self.series
        for (service, has_error), (count, trace_id) in tally.traces.items():
            exemplar = trace_exemplar(trace_id) if has_error else None
            s.traces.inc((capped("service", service), "error" if has_error else "ok"), count, exemplar)
        for service, seconds, trace_id in tally.durations:
            s.trace_duration.observe((capped("service", service),), seconds, trace_exemplar(trace_id))
        for (service, agent, model, kind), tokens in tally.tokens.items():
            by = (capped("service", service), self._call_agent(agent), capped("model", model))
            s.llm_tokens.inc((*by, *_KINDS[kind]), tokens)
        for (service, agent, model, provider), usd in tally.costs.items():
            by = (capped("service", service), self._call_agent(agent), capped("model", model))
            s.llm_cost.inc((*by, capped("provider", provider) if provider else ""), usd)
        for (service, model), calls in tally.unpriced.items():
            s.unpriced_calls.inc((capped("service", service), capped("model", model)), calls)
        for service, usd, trace_id in tally.trace_costs:
            s.trace_cost.observe((capped("service", service),), usd, trace_exemplar(trace_id))
        for (service, model, ok), calls in tally.llm_calls.items():
            s.llm_calls.inc((capped("service", service), capped("model", model), "ok" if ok else "error"), calls)
        for (service, tool, ok), calls in tally.tools.items():
            s.tool_calls.inc((capped("service", service), capped("tool", tool), "ok" if ok else "error"), calls)

    def _apply_results(
        self, results: Mapping[ResultKey, ResultCounts], capped: Callable[[str, object], str]
    ) -> list[WindowSample]:
        """Counters and histograms of every result label set (under the series lock); the window samples."""
        window_samples: list[WindowSample] = []
        s = self.series
        counters, score, skips, seconds = s.results, s.score, s.skips, s.evaluation_seconds
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

    def _add_external(self, evaluators: Iterable[str]) -> None:
        """Evaluators whose results are external from now on: their label sets are resolved again."""
        names = {sanitize_label_value(name) for name in evaluators} - self._external
        if names:
            self._external |= names
            self._resolved.clear()

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
        source = SOURCE_EXTERNAL if name in self._external else SOURCE_DAEMON
        key = _ResultKey((name, lvl, svc, agent_label, variant_label), source)
        # A value folded into __other__ is resolved again each time, so every occurrence is counted as overflow.
        if OTHER not in (svc, agent_label, variant_label) and len(self._resolved) < MAX_RESOLVED:
            self._resolved[raw] = key
        return key

    def evaluator_service(self, evaluator: str, service: str) -> tuple[str, str]:
        """The label values of (evaluator, service), as the result series have them (sanitised, capped)."""
        return sanitize_label_value(evaluator), self._capped("service", service)

    def service_agent(self, service: str, agent: str) -> tuple[str, str]:
        """The label values of (service, agent) as the trace series have them (sanitised, capped; agent "" when
        none)."""
        return self._capped("service", service), self._call_agent(agent)

    def variant_label(self, variant: str) -> str:
        """The capped variant; empty for no variant (variants off, or the trace lacks the attribute)."""
        text = clean_label_text(variant)
        return self._cap("variant", text) if text else ""

    def _call_agent(self, agent: str) -> str:
        """The capped agent of an LLM call; empty for a call outside any agent."""
        name = clean_label_text(agent) if agent else ""
        return self._capped("agent", name) if name else ""

    def _agent_label(self, level: str, agent: str | None) -> str:
        """The capped agent name at agent level; empty at trace and llm level and for an unnamed agent."""
        name = clean_label_text(agent) if level == "agent" else ""
        return self._cap("agent", name) if name else ""

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
