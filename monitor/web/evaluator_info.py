"""The configured evaluators as `/api/v1/evaluators` shows them: settings, window figures, alert state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from monitor.metrics import ResultMetrics
from monitor.metrics.labels import sanitize_label_value
from monitor.review.agreement import EvaluatorAgreement
from monitor.review.models import EvaluatorStatus, EvaluatorWindow

if TYPE_CHECKING:
    from monitor.engine.configured import ConfiguredEvaluator


def evaluator_infos(
    evaluators: Sequence[ConfiguredEvaluator],
    metrics: ResultMetrics,
    agreement: Mapping[str, EvaluatorAgreement] | None = None,
) -> list[EvaluatorStatus]:
    """One EvaluatorStatus per configured evaluator, in config order: its window pass ratios and samples summed
    over services, its alert's worst state over services (None without an alert), and reviewers' agreement with
    it from `agreement` (by evaluator name: `AgreementCache.current()`; None when it has no review)."""
    levels = metrics.alert_levels()
    agreement = agreement or {}
    infos = []
    for configured in evaluators:
        evaluator, entry = configured.evaluator, configured.entry
        name = sanitize_label_value(configured.label)
        alert = getattr(entry, "alert", None)
        slo = getattr(entry, "slo", None)
        threshold = getattr(evaluator, "threshold", None)
        windows = _windows(metrics.window_totals(configured.label))
        by_variant = {v: _windows(totals) for v, totals in metrics.window_totals_by_variant(configured.label).items()}
        infos.append(
            EvaluatorStatus(
                name=name,
                kind=str(getattr(evaluator, "kind", "rule")),
                level=str(getattr(evaluator, "level", "")),
                threshold=float(threshold) if threshold is not None else None,
                sampling=configured.sampling,
                alert_min_pass_ratio=alert.min_pass_ratio if alert is not None else None,
                alert_window=alert.window if alert is not None else None,
                alert_state=levels.get(name, "inactive") if alert is not None else None,  # type: ignore[arg-type]
                slo_objective=slo.objective if slo is not None else None,
                windows=windows,
                variant_windows=by_variant,
                agreement=agreement.get(configured.label) or agreement.get(name),
            )
        )
    return infos


def _windows(totals: list[tuple[str, int, int]]) -> list[EvaluatorWindow]:
    return [
        EvaluatorWindow(window=label, samples=verdicts, pass_ratio=passed / verdicts if verdicts else None)
        for label, passed, verdicts in totals
    ]
