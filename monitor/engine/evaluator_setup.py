"""Turn the resolved `evaluators` config section into evaluator instances and alert rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.judges import PairwiseJudge
from evaluators.pricing import ModelPrice
from evaluators.sdk import BaseEvaluator, EvaluatorConfigError, builtin, list_builtins, load_evaluator
from monitor.alerting.thresholds import AlertRule
from monitor.config import Loc, Resolved, dotted
from monitor.config.evaluators import AlertConfig
from monitor.engine.configured import ConfiguredEvaluator


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


def build_evaluators(
    resolved: Sequence[Resolved], prices: Mapping[str, ModelPrice] | None = None
) -> tuple[list[ConfiguredEvaluator], list[tuple[Loc, str]]]:
    """The enabled entries built, and (location, message) for every one that cannot be built. `prices`: the
    `pricing.models` overrides, given to every evaluator that prices calls (`with_pricing`)."""
    built: list[ConfiguredEvaluator] = []
    problems: list[tuple[Loc, str]] = []
    first: dict[str, Loc] = {}
    for item in resolved:
        entry = item.entry
        if not entry.enabled:
            continue
        try:
            evaluator = instantiate(entry)
        except Exception as exc:  # an evaluator module may raise anything while it is imported or built
            problems.append(_failure(item, exc))
            continue
        if isinstance(evaluator, PairwiseJudge):
            where = (*item.loc, "name" if entry.name else "module") if _is_entry(item.loc) else item.loc
            problems.append((where, f"{evaluator.name} judges pairs of traces, not traces: configure it under "
                             "variants.pairwise"))  # fmt: skip
            continue
        if prices and hasattr(evaluator, "with_pricing"):
            evaluator = evaluator.with_pricing(prices)
        label = label_for(entry, evaluator)
        if label in first:
            where = (*item.loc, "id") if _is_entry(item.loc) else item.loc
            problems.append((where, f"evaluator label {label!r} is also used by {dotted(first[label])}; set an `id:`"))
            continue
        first[label] = item.loc
        built.append(ConfiguredEvaluator(evaluator, label, entry.sampling, entry))
    return built, problems


def build_pairwise_judges(entries: Sequence[Any]) -> tuple[dict[str, PairwiseJudge], list[tuple[Loc, str]]]:
    """The pairwise judge of each `variants.pairwise` entry, by its `evaluator` (a builtin pairwise judge), and
    (location, message) for every entry that names none."""
    judges: dict[str, PairwiseJudge] = {}
    problems: list[tuple[Loc, str]] = []
    for index, entry in enumerate(entries):
        name = entry.evaluator
        if name in judges:
            continue
        try:
            judge = builtin(name)
        except ValueError:
            judge = None
        if isinstance(judge, PairwiseJudge):
            judges[name] = judge
            continue
        known = ", ".join(i.name for i in list_builtins() if i.kind == PairwiseJudge.kind)
        problems.append((("variants", "pairwise", index, "evaluator"), f"{name!r} is not a pairwise judge ({known})"))
    return judges, problems


def _is_entry(loc: Loc) -> bool:
    """Whether `loc` is an entry of a list (`evaluators[3]`, `evaluators.add[0]`), where `name:` etc. are written."""
    return bool(loc) and isinstance(loc[-1], int)


def _failure(item: Resolved, exc: Exception) -> tuple[Loc, str]:
    """Where an entry that cannot be built is reported: at the param, else `params`, `name` or `module`."""
    entry = item.entry
    expected = isinstance(exc, ValueError | TypeError | ImportError | AttributeError)
    message = str(exc) if expected else f"{entry.label}: {type(exc).__name__}: {exc}"
    if isinstance(exc, EvaluatorConfigError) and entry.params:
        param = [exc.param] if exc.param in entry.params else []
        return (*item.loc, "params", *param), message
    if _is_entry(item.loc):
        return (*item.loc, "name" if entry.name else "module"), message
    return item.loc, message


def thresholds_of(
    evaluators: list[ConfiguredEvaluator], external: Mapping[str, AlertConfig] | None = None
) -> dict[str, AlertRule]:
    """The in-process alert rules by metric label: the configured evaluators' `alert:`, then `external`'s (the
    external evaluators', `external_evaluations.alerts`)."""
    alerts = [(c.label, c.entry.alert) for c in evaluators if c.entry is not None and c.entry.alert is not None]
    return {label: _rule(label, alert) for label, alert in [*alerts, *(external or {}).items()]}


def _rule(label: str, alert: AlertConfig) -> AlertRule:
    return AlertRule(
        name=f"{label}_pass_ratio",
        min_pass_ratio=alert.min_pass_ratio,
        window_seconds=alert.window,
        min_samples=alert.min_samples,
        severity=alert.severity,
        for_seconds=alert.for_,
    )
