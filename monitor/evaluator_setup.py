"""Turn the `evaluators` config section into evaluator instances and alert rules."""

from __future__ import annotations

from typing import Any

from evaluators.sdk import BaseEvaluator, builtin, list_builtins, load_evaluator

from .config import MonitorConfig
from .evaluation import ConfiguredEvaluator
from .metrics import AlertRule


def label_for(entry: Any, evaluator: Any) -> str:
    """The `evaluator` metric label: the entry's id, else the evaluator's own name."""
    return entry.id or getattr(evaluator, "name", None) or entry.name or entry.module


def instantiate(entry: Any) -> BaseEvaluator:
    """The evaluator an `evaluators` entry names (builtin or module path), configured and thresholded."""
    if entry.name:
        evaluator = builtin(entry.name, **entry.params)
    else:
        loaded = load_evaluator(str(entry.module))
        if len(loaded) != 1:
            raise ValueError(f"module {entry.module!r} defines {len(loaded)} evaluators; name one with ':'")
        evaluator = loaded[0].with_config(**entry.params) if entry.params else loaded[0]
    if entry.threshold is not None:
        evaluator = evaluator.with_threshold(entry.threshold)
    return evaluator


def default_evaluators() -> list[ConfiguredEvaluator]:
    """Every rule-based builtin that needs no ground truth and no judge, with its defaults."""
    chosen = []
    for info in list_builtins():
        if info.needs_ground_truth or getattr(info, "kind", "rule") != "rule":
            continue
        chosen.append(ConfiguredEvaluator(builtin(info.name), info.name))
    return chosen


def configured_evaluators(config: MonitorConfig) -> list[ConfiguredEvaluator]:
    if config.evaluators is None:
        return default_evaluators()
    configured = []
    for entry in config.evaluators:
        if entry.enabled:
            evaluator = instantiate(entry)
            configured.append(ConfiguredEvaluator(evaluator, label_for(entry, evaluator), entry.sampling, entry))
    return configured


def thresholds_of(evaluators: list[ConfiguredEvaluator]) -> dict[str, AlertRule]:
    rules: dict[str, AlertRule] = {}
    for configured in evaluators:
        entry = configured.entry
        if entry is not None and entry.alert is not None:
            label = configured.label
            rules[label] = AlertRule(
                name=f"{label}_pass_ratio",
                min_pass_ratio=entry.alert.min_pass_ratio,
                window_seconds=entry.alert.window,
                min_samples=entry.alert.min_samples,
                severity=entry.alert.severity,
            )
    return rules
