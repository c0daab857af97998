"""MetricsTally: what the metrics take from a batch of evaluated traces, summed where the batch is evaluated.

An evaluation worker adds every trace and result of its batch to a tally and returns the tally's wire form
(builtins only, so it pickles small): counts per raw label set, the values each histogram series observes,
and the (score, verdict) samples per window. The process that owns the registry applies it with
`ResultMetrics.apply_tally`, which sanitises and caps each distinct label set once per batch instead of
once per result. Label values here are raw (as the traces carry them); nothing here knows the caps.
"""

from __future__ import annotations

import math
from math import isfinite
from typing import Any

NO_VERDICT = "no_verdict"  # skip reason for an unskipped result that carries no pass/fail verdict

ResultKey = tuple[str, str, str, str | None, str]  # (evaluator, level, service, agent, variant), raw
SignatureKey = tuple[str, str, str]  # (evaluator, service, failure signature id), raw


def finite(value: Any) -> float | None:
    """`value` as a finite float, else None."""
    if type(value) is float:  # the common case first
        return value if isfinite(value) else None
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class ResultCounts:
    """The results of one (evaluator, level, service, agent, variant) in a batch."""

    __slots__ = ("durations", "failed", "failed_trace", "passed", "samples", "skips")

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.failed_trace: str | None = None  # the last failing trace: the exemplar of the fail counter
        self.skips: dict[str, int] = {}
        self.durations: list[float] = []  # evaluator run times to observe
        # One per verdict: (finite score or None, passed, trace id when it failed): score histogram and windows.
        self.samples: list[tuple[float | None, bool, str | None]] = []

    def wire(self) -> tuple:
        return (self.passed, self.failed, self.failed_trace, self.skips, self.durations, self.samples)

    @classmethod
    def from_wire(cls, wire: tuple) -> ResultCounts:
        counts = cls()
        counts.passed, counts.failed, counts.failed_trace, counts.skips, counts.durations, counts.samples = wire
        return counts


class MetricsTally:
    """Sums over a batch of evaluated traces; `wire()` / `from_wire()` cross the process boundary."""

    __slots__ = (
        "attributes_dropped",
        "costs",
        "delays_from",
        "durations",
        "evaluated",
        "exports",
        "external",
        "failures",
        "judge_jobs",
        "llm_calls",
        "normalizer_errors",
        "pair_offers",
        "results",
        "signatures",
        "tokens",
        "tools",
        "trace_costs",
        "traces",
        "turns",
        "unpriced",
    )

    def __init__(self) -> None:
        self.evaluated = 0
        self.traces: dict[tuple[str, bool], list] = {}  # (service, has_error) → [count, last trace id]
        self.durations: list[tuple[str, float, str]] = []  # (service, finite seconds, trace id) per trace
        self.tokens: dict[tuple[str, str, str | None, int], int] = {}  # (service, agent, model, kind index) → n
        self.llm_calls: dict[tuple[str, str | None, bool], int] = {}  # (service, model, ok) → calls
        self.costs: dict[tuple[str, str, str | None, str], float] = {}  # (service, agent, model, provider) → USD
        self.unpriced: dict[tuple[str, str | None], int] = {}  # (service, model) → calls with usage and no price
        self.trace_costs: list[tuple[str, float, str]] = []  # (service, USD, trace id) of traces with a priced call
        self.tools: dict[tuple[str, str, bool], int] = {}  # (service, tool, ok) → calls
        self.delays_from: list[float] = []  # time.monotonic() of each trace's last span
        self.results: dict[ResultKey, ResultCounts] = {}
        self.failures: list[tuple[str, str]] = []  # (trace id, error) of traces not evaluated
        self.judge_jobs: list[Any] = []  # judgements to make (engine.judge_stage), passed through as they are
        self.pair_offers: list[Any] = []  # traces the pairwise judge may pair (engine.pairing), passed through
        self.normalizer_errors: dict[str, int] = {}  # convention → normalizer calls that raised during the batch
        self.signatures: dict[SignatureKey, int] = {}  # (evaluator, service, signature id) → failing results
        self.attributes_dropped: dict[str, int] = {}  # receiver → too-deep attributes left out of raw spans
        self.turns: list[Any] = []  # conversations' turns (engine.turn_wire), passed through to the sessions
        self.external: set[str] = set()  # the evaluators of the external results (source="external"), raw
        self.exports: dict[str, int] = {}  # outcome → evaluation records exported, dropped, failed (monitor.export)

    # --- adding -----------------------------------------------------------------------------------
    def add_trace(
        self,
        service: str,
        duration_seconds: float,
        has_error: bool,
        trace_id: str,
        calls: Any = (),
        tools: Any = (),
        last_seen: float | None = None,
    ) -> None:
        """One evaluated trace: `calls` its LLM calls' figures (`monitor.outcomes.CallFigures`), `tools` (tool, ok)."""
        self.evaluated += 1
        entry = self.traces.get((service, has_error))
        if entry is None:
            self.traces[(service, has_error)] = [1, trace_id]
        else:
            entry[0] += 1
            entry[1] = trace_id
        duration = finite(duration_seconds)
        if duration is not None:
            self.durations.append((service, max(duration, 0.0), trace_id))
        if calls:
            self._add_calls(service, trace_id, calls)
        used = self.tools
        for tool, ok in tools:
            use = (service, tool, bool(ok))
            used[use] = used.get(use, 0) + 1
        if last_seen is not None:
            self.delays_from.append(last_seen)

    def _add_calls(self, service: str, trace_id: str, calls: Any) -> None:
        counts, made, costs, unpriced = self.tokens, self.llm_calls, self.costs, self.unpriced
        trace_cost: float | None = None
        for model, agent, provider, ok, tokens, cost in calls:
            call = (service, model, bool(ok))
            made[call] = made.get(call, 0) + 1
            if tokens is not None:
                for kind, n in enumerate(tokens):
                    if n > 0:
                        counted = (service, agent, model, kind)
                        counts[counted] = counts.get(counted, 0) + n
            if cost is not None:
                spent = (service, agent, model, provider)
                costs[spent] = costs.get(spent, 0.0) + cost
                trace_cost = cost + (trace_cost or 0.0)
            elif tokens is not None:
                unknown = (service, model)
                unpriced[unknown] = unpriced.get(unknown, 0) + 1
        if trace_cost is not None:
            self.trace_costs.append((service, trace_cost, trace_id))

    def add_results(self, service: str, trace_id: str, rows: Any, variant: str = "") -> None:
        """The results of one trace (of `variant`: "" when none); each row has agent, evaluator, level, score,
        passed, skip_reason and duration_seconds (by name). A row with a skip_reason is a skip; one with neither
        a skip_reason nor a verdict is a skip with reason `no_verdict`. A failing row's `signature` (when it has
        one) is counted in `signatures`."""
        results = self.results
        signatures = self.signatures
        for row in rows:
            if getattr(row, "external", False):
                self.external.add(row.evaluator)
            key = (row.evaluator, row.level, service, row.agent, variant)
            counts = results.get(key)
            if counts is None:
                counts = results[key] = ResultCounts()
            skip_reason = row.skip_reason
            elapsed = finite(row.duration_seconds)
            if elapsed is not None and (skip_reason is None or elapsed > 0):
                counts.durations.append(max(elapsed, 0.0))
            passed = row.passed
            if skip_reason is None and passed is None:
                skip_reason = NO_VERDICT
            if skip_reason is not None:
                counts.skips[skip_reason] = counts.skips.get(skip_reason, 0) + 1
                continue
            score = finite(row.score)
            if passed:
                counts.passed += 1
                counts.samples.append((score, True, None))
            else:
                counts.failed += 1
                counts.failed_trace = trace_id
                counts.samples.append((score, False, trace_id))
                signature = getattr(row, "signature", None)
                if signature is not None:
                    seen = (row.evaluator, service, signature.id)
                    signatures[seen] = signatures.get(seen, 0) + 1

    def add_failure(self, trace_id: str, error: str) -> None:
        self.failures.append((trace_id, error))

    # --- crossing processes -----------------------------------------------------------------------
    def wire(self) -> tuple:
        return (
            self.evaluated,
            self.traces,
            self.durations,
            self.tokens,
            self.llm_calls,
            self.costs,
            self.unpriced,
            self.trace_costs,
            self.tools,
            self.delays_from,
            {key: counts.wire() for key, counts in self.results.items()},
            self.failures,
            self.judge_jobs,
            self.pair_offers,
            self.normalizer_errors,
            self.signatures,
            self.turns,
            self.attributes_dropped,
            sorted(self.external),
            self.exports,
        )

    @classmethod
    def from_wire(cls, wire: tuple) -> MetricsTally:
        tally = cls()
        (
            tally.evaluated,
            tally.traces,
            tally.durations,
            tally.tokens,
            tally.llm_calls,
            tally.costs,
            tally.unpriced,
            tally.trace_costs,
            tally.tools,
            tally.delays_from,
            results,
            tally.failures,
            tally.judge_jobs,
            tally.pair_offers,
            tally.normalizer_errors,
            tally.signatures,
            tally.turns,
            tally.attributes_dropped,
            external,
            tally.exports,
        ) = wire
        tally.external = set(external)
        tally.results = {key: ResultCounts.from_wire(counts) for key, counts in results.items()}
        return tally
