"""The pairwise judge's outcomes, `agent_eval_pairwise_total{evaluator, baseline, candidate, outcome}`.

One series per configured `variants.pairwise` entry and outcome (win, tie, loss: the candidate's), all at 0
from start-up so that `increase()` sees the first pair. Label values come from the config, never from a trace:
the evaluator label is sanitised, the variants go through the `variant` label's cap (where configured variants
are admitted first).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter

from monitor.config.variants import VariantsConfig
from monitor.metrics.labels import sanitize_label_value

OUTCOMES = ("win", "tie", "loss")


class PairwiseMetrics:
    def __init__(
        self, registry: CollectorRegistry, variants: VariantsConfig, variant_label: Callable[[str], str]
    ) -> None:
        self.pairs = Counter(
            "agent_eval_pairwise",
            "Pairs of a baseline's and a candidate's traces judged by a pairwise judge, by the candidate's outcome "
            "(win, tie, loss) over both orders.",
            ["evaluator", "baseline", "candidate", "outcome"],
            registry=registry,
        )
        self._labels: dict[tuple[str, str, str], tuple[str, str, str]] = {}
        self._counts: dict[tuple[str, str, str], dict[str, int]] = {}  # the same counts, for the canary view
        for entry in variants.pairwise:
            key = (entry.evaluator, entry.baseline, entry.candidate)
            labels = (
                sanitize_label_value(entry.evaluator),
                variant_label(entry.baseline),
                variant_label(entry.candidate),
            )
            self._labels[key] = labels
            self._counts[key] = dict.fromkeys(OUTCOMES, 0)
            for outcome in OUTCOMES:
                self.pairs.labels(*labels, outcome)

    def count(self, evaluator: str, baseline: str, candidate: str, outcome: str) -> None:
        """One judged pair of a configured entry (others, and unknown outcomes, are ignored)."""
        labels = self._labels.get((evaluator, baseline, candidate))
        if labels is not None and outcome in OUTCOMES:
            self.pairs.labels(*labels, outcome).inc()
            self._counts[(evaluator, baseline, candidate)][outcome] += 1

    def totals(self, baseline: str, candidate: str) -> list[tuple[str, dict[str, int]]]:
        """(evaluator, {outcome: pairs}) of every configured entry of these two variants, in config order."""
        return [(e, dict(counts)) for (e, b, c), counts in self._counts.items() if (b, c) == (baseline, candidate)]
