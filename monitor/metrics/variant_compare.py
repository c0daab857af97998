"""Live canary analysis: each configured evaluator's results of a candidate variant against a baseline, over a
rolling window, with the significance tests of `evaluators.sdk.significance`, computed at scrape time: kept for
the next scrape while no result enters or leaves the comparison's windows, and otherwise with the rank test's
terms patched by the scores that did (`rank_sums.RankSums`), not ranked again from every score.

Every configured comparison exports all its series from start-up: NaN values, 0 samples and verdict 0 with
reason `insufficient_samples` until both sides have `min_samples` results with a verdict in the window. The
verdict is the same one `agent-monitor compare` gives offline: the pooled two-proportion z-test on pass/fail,
then the Mann-Whitney U test on scores, at `alpha`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import get_args

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from evaluators.sdk.significance import (
    ProportionTest,
    RankTest,
    Verdict,
    VerdictReason,
    mann_whitney_floats,
    rank_test,
    two_proportions,
    verdict,
)
from monitor.config.variants import VariantsConfig
from monitor.metrics.rank_sums import RankSums
from monitor.metrics.windows import Key, WindowSnapshot, WindowStore

PAIR_LABELS = ["evaluator", "baseline", "candidate"]
REASONS: tuple[str, ...] = get_args(VerdictReason)
ROLES = ("baseline", "candidate")
NAN = math.nan

# What a comparison's state was computed from: both sides' keys and their windows' stamp (WindowStore.generations,
# WindowRows.changes).
Source = tuple[tuple[Key, ...], tuple[Key, ...], tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class ComparisonSpec:
    """One configured comparison, with its labels as exported (evaluator label, variant labels)."""

    evaluator: str
    baseline: str
    candidate: str
    window_seconds: float
    min_samples: int
    alpha: float

    @property
    def labels(self) -> list[str]:
        return [self.evaluator, self.baseline, self.candidate]


@dataclass(frozen=True, slots=True)
class ComparisonState:
    """A comparison at one moment: both sides' windows, the tests and the verdict."""

    spec: ComparisonSpec
    baseline: WindowSnapshot
    candidate: WindowSnapshot
    proportions: ProportionTest
    ranks: RankTest | None
    verdict: Verdict


def _families() -> dict[str, GaugeMetricFamily]:
    def gauge(name: str, doc: str, extra: Sequence[str] = ()) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"agent_eval_variant_{name}", doc, labels=[*PAIR_LABELS, *extra])

    return {
        "delta": gauge("delta", "Candidate pass ratio minus the baseline's over the comparison window."),
        "lower": gauge("delta_lower", "Lower bound of the delta's (1 - alpha) interval (Newcombe hybrid score)."),
        "upper": gauge("delta_upper", "Upper bound of the delta's (1 - alpha) interval (Newcombe hybrid score)."),
        "ratio": gauge("pass_ratio", "Pass ratio of each side over the comparison window.", ["role"]),
        "samples": gauge(
            "samples", "Results with a pass/fail verdict of each side in the comparison window.", ["role"]
        ),
        "p_value": gauge(
            "p_value",
            "Two-sided p-value: test=pass_rate (two-proportion z-test), test=scores (Mann-Whitney U).",
            ["test"],
        ),
        "verdict": gauge(
            "verdict", "-1 candidate significantly worse, 0 no significant difference or too few samples, 1 better."
        ),
        "reason": gauge("verdict_reason", "1 for the reason of the current verdict, 0 for the others.", ["reason"]),
    }


class VariantComparisons(Collector):
    """The agent_eval_variant_* gauges of every configured comparison, from the window store's samples (each
    side's results over every service)."""

    def __init__(self, store: WindowStore, specs: Sequence[ComparisonSpec]) -> None:
        self.store = store
        self.specs = list(specs)
        self._lock = threading.Lock()
        # Per spec index: (the sides' keys and window stamp, the state computed from them). A scrape with no
        # result added to or dropped from a comparison's windows since the last one reuses its state.
        self._cache: dict[int, tuple[Source, ComparisonState]] = {}
        self._ranks: dict[int, RankSums] = {}  # per spec index: its rank terms, patched as its windows change

    def windows_of(self, evaluator: str) -> list[float]:
        """The window lengths the comparisons of `evaluator` need kept."""
        return [spec.window_seconds for spec in self.specs if spec.evaluator == evaluator]

    def describe(self) -> Iterator[Metric]:
        yield from _families().values()

    def states(self) -> list[ComparisonState]:
        """Every configured comparison now, in configured order."""
        keys = self.store.keys()
        with self._lock:
            return [self._cached_state(index, spec, keys) for index, spec in enumerate(self.specs)]

    def _cached_state(self, index: int, spec: ComparisonSpec, keys: Sequence[Key]) -> ComparisonState:
        """The state of `spec`, computed again only when a result entered or left one of its windows, and
        then with its rank terms patched by the scores that did (`RankSums`)."""
        base_keys = tuple(key for key in keys if key[0] == spec.evaluator and key[2] == spec.baseline)
        cand_keys = tuple(key for key in keys if key[0] == spec.evaluator and key[2] == spec.candidate)
        sides = (base_keys, cand_keys)
        stamp = self.store.generations((*base_keys, *cand_keys), spec.window_seconds)
        cached = self._cache.get(index)
        if stamp is not None and cached is not None and cached[0] == (*sides, stamp):
            return cached[1]
        ranks_of = self._ranks.setdefault(index, RankSums())
        rows = self.store.rows((*base_keys, *cand_keys), spec.window_seconds, since=ranks_of.marks(sides))
        if rows is None:  # the clock stepped back: windows filtered by time, computed afresh at every scrape
            self._cache.pop(index, None)
            self._ranks.pop(index, None)
            return self._state(spec, base_keys, cand_keys)
        base_rows, cand_rows = rows[: len(base_keys)], rows[len(base_keys) :]
        base = WindowSnapshot.merge(r.snapshot() for r in base_rows)
        cand = WindowSnapshot.merge(r.snapshot() for r in cand_rows)
        ranks = None
        if base.scores and cand.scores:
            terms = ranks_of.terms(sides, base_rows, cand_rows)
            ranks = rank_test(len(base.scores), len(cand.scores), *terms)
        state = self._of(spec, base, cand, ranks)
        self._cache[index] = ((*sides, tuple(r.changes for r in rows)), state)
        return state

    def _state(self, spec: ComparisonSpec, base_keys: Sequence[Key], cand_keys: Sequence[Key]) -> ComparisonState:
        """The state of `spec` computed from every score of its windows."""
        base = self.store.merged(base_keys, spec.window_seconds, ordered=True)
        cand = self.store.merged(cand_keys, spec.window_seconds, ordered=True)
        # ordered windows hold floats without NaN, each window's ascending: the pooled sort merges runs
        ranks = mann_whitney_floats(base.scores, cand.scores) if base.scores and cand.scores else None
        return self._of(spec, base, cand, ranks)

    @staticmethod
    def _of(
        spec: ComparisonSpec, base: WindowSnapshot, cand: WindowSnapshot, ranks: RankTest | None
    ) -> ComparisonState:
        test = two_proportions(base.passed, base.verdicts, cand.passed, cand.verdicts, spec.alpha)
        return ComparisonState(spec, base, cand, test, ranks, verdict(test, ranks, spec.alpha, spec.min_samples))

    def collect(self) -> Iterator[Metric]:
        families = _families()
        states = self.states()
        for state in states:
            labels = state.spec.labels
            test = state.proportions
            families["delta"].add_metric(labels, test.delta)
            families["lower"].add_metric(labels, test.ci_low)
            families["upper"].add_metric(labels, test.ci_high)
            for role, window in zip(ROLES, (state.baseline, state.candidate), strict=True):
                ratio = window.pass_ratio
                families["ratio"].add_metric([*labels, role], NAN if ratio is None else ratio)
                families["samples"].add_metric([*labels, role], window.verdicts)
            has_verdicts = test.base_total > 0 and test.cand_total > 0
            families["p_value"].add_metric([*labels, "pass_rate"], test.p_value if has_verdicts else NAN)
            ranks = state.ranks
            families["p_value"].add_metric([*labels, "scores"], NAN if ranks is None else ranks.p_value)
            families["verdict"].add_metric(labels, state.verdict.value)
            for reason in REASONS:
                families["reason"].add_metric([*labels, reason], 1.0 if reason == state.verdict.reason else 0.0)
        yield from families.values()


def specs_of(
    variants: VariantsConfig, label: Callable[[str], str], variant: Callable[[str], str]
) -> list[ComparisonSpec]:
    """The specs of `variants.compare`, with the labels as `label` (evaluator) and `variant` export them."""
    return [
        ComparisonSpec(
            evaluator=label(entry.evaluator),
            baseline=variant(entry.baseline),
            candidate=variant(entry.candidate),
            window_seconds=entry.window,
            min_samples=entry.min_samples,
            alpha=variants.alpha if entry.alpha is None else entry.alpha,
        )
        for entry in variants.compare
    ]
