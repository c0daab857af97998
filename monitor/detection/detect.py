"""One report: every signal's recent window against its baseline, tested, adjusted for the number of tests, and
judged against the minimum effect.

For each signal (of `recent` and both baselines, when the signal and its subject are enabled): the baseline is the
same hours of the previous days when they hold `min_samples` items, else the trailing window. The signal is tested
when both windows hold `min_samples`; an untested signal is still reported when either window has data (its
baseline is exported). The q-values are the Benjamini–Hochberg adjustment over every signal tested in the report
(`false_discovery_rate` bounds the expected share of false changes among those flagged, across all agents). A
tested signal whose effect is below `min_effect` cannot be significant: its test is not run and its p-value is
1, and it still counts in the family (so the adjustment is the same as if it had been run, or stricter). A
change is significant when its q-value is at most `false_discovery_rate` and its effect is at least `min_effect`:
points (recent − baseline) for unit-scale signals, relative (recent / baseline − 1) for magnitudes.

A magnitude whose baseline mean is 0 (e.g. no tool call at all, then some) has no finite relative effect: its
effect is taken as `MAX_RELATIVE_EFFECT` (+10 000 %, past any `min_effect.relative`), so the test alone decides.
Relative effects are capped at that bound either way, so that every effect is a finite, exportable number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from monitor.store.signal_rows import VariantCount

from .model import BaselineKind, Direction, DriftReport, Moments, Scale, SignalId, SignalState, Statistic
from .settings import DriftSettings, EffectSettings, SignalSettings
from .signals import SIGNALS
from .statistics import adjusted, mean_p_value, ratio_p_value

MAX_RELATIVE_EFFECT = 100.0  # +10 000 %: a relative effect's bound (MinEffect.relative's too)
_TOLERANCE = 1e-9  # an effect this close to min_effect counts as reaching it (0.05 − 0.02 is 0.0299…)


class Variants(NamedTuple):
    """The variant counts of the recent window and of the baseline windows (all of them)."""

    recent: Sequence[VariantCount] = ()
    baseline: Sequence[VariantCount] = ()


def raw_effect(scale: Scale, baseline: Moments, recent: Moments) -> float:
    """recent − baseline means (unit scale), or recent / baseline − 1 capped at ±MAX_RELATIVE_EFFECT (magnitude)."""
    b, r = baseline.mean or 0.0, recent.mean or 0.0
    if scale is Scale.UNIT:
        return r - b
    if b == 0:
        return 0.0 if r == 0 else (MAX_RELATIVE_EFFECT if r > 0 else -MAX_RELATIVE_EFFECT)
    return max(-MAX_RELATIVE_EFFECT, min(MAX_RELATIVE_EFFECT, (r - b) / abs(b)))


def _p_value(statistic: Statistic, baseline: Moments, recent: Moments) -> float | None:
    test = ratio_p_value if statistic is Statistic.RATIO else mean_p_value
    return test(baseline, recent)


def _new_variants(variants: Variants) -> dict[tuple[str, str], tuple[str, ...]]:
    """Per (service, agent): the variants with traces in the recent window and none in the baselines."""
    seen = {(v.service, v.agent, v.variant) for v in variants.baseline if v.traces > 0}
    new: dict[tuple[str, str], set[str]] = {}
    for v in variants.recent:
        if v.traces > 0 and v.variant and (v.service, v.agent, v.variant) not in seen:
            new.setdefault((v.service, v.agent), set()).add(v.variant)
    return {agent: tuple(sorted(names)) for agent, names in new.items()}


def _compare(
    config: DriftSettings, key: SignalId, recent: Moments, same_hours: Moments, trailing: Moments
) -> SignalState | None:
    """The signal's state before adjustment (its p-value, no verdict yet), or None when it is off or has no data."""
    signal = SIGNALS.get(key.signal)
    settings = config.override(key.signal, key.subject)
    if signal is None or not settings.enabled:
        return None
    least = settings.min_samples or config.min_samples
    kind = BaselineKind.SAME_HOURS if same_hours.n >= least else BaselineKind.TRAILING
    baseline = same_hours if kind is BaselineKind.SAME_HOURS else trailing
    if baseline.n <= 0 and recent.n <= 0:
        return None
    tested = baseline.n >= least and recent.n >= least
    p_value = None
    if tested:  # a change below min_effect cannot be significant: its test is not run (p 1), still in the family
        p_value = (
            _p_value(signal.statistic, baseline, recent)
            if _reaches(settings, config, signal.scale, baseline, recent)
            else 1.0
        )
    return SignalState(
        service=key.service,
        agent=key.agent,
        signal=key.signal,
        subject=key.subject,
        kind=signal.kind,
        statistic=signal.statistic,
        scale=signal.scale,
        baseline_kind=kind,
        baseline=baseline,
        recent=recent,
        p_value=p_value,
    )


def _bound(settings: SignalSettings, config: DriftSettings, scale: Scale) -> float:
    least: EffectSettings = settings.min_effect or config.min_effect
    return least.absolute if scale is Scale.UNIT else least.relative


def _reaches(settings: SignalSettings, config: DriftSettings, scale: Scale, baseline: Moments, recent: Moments) -> bool:
    effect = raw_effect(scale, baseline, recent)
    return effect != 0 and abs(effect) >= _bound(settings, config, scale) - _TOLERANCE


def _judged(config: DriftSettings, state: SignalState, q_value: float) -> SignalState:
    """The state with its q-value and verdict: significant, its direction, whether it is worse, and its effect."""
    effect = raw_effect(state.scale, state.baseline, state.recent)
    bound = _bound(config.override(state.signal, state.subject), config, state.scale)
    significant = q_value <= config.false_discovery_rate and abs(effect) >= bound - _TOLERANCE and effect != 0
    if not significant:
        return state.model_copy(update={"q_value": q_value})
    direction = Direction.UP if effect > 0 else Direction.DOWN
    worse = SIGNALS[state.signal].worse
    return state.model_copy(
        update={
            "q_value": q_value,
            "significant": True,
            "effect": effect,
            "direction": direction,
            "worse": None if worse is None else direction is worse,
        }
    )


class _Overrides:
    """The settings with each signal's override looked up once per report (a report asks twice per signal)."""

    def __init__(self, config: DriftSettings) -> None:
        self._config = config
        self._found: dict[tuple[str, str], SignalSettings] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)

    def override(self, signal: str, subject: str = "") -> SignalSettings:
        found = self._found.get((signal, subject))
        if found is None:
            found = self._found[(signal, subject)] = self._config.override(signal, subject)
        return found


def _order(key: SignalId) -> tuple[str, str, str, str]:
    return key.service, key.agent, key.signal, key.subject


def detect(
    config: DriftSettings,
    as_of: float,
    recent: Mapping[SignalId, Moments],
    same_hours: Mapping[SignalId, Moments],
    trailing: Mapping[SignalId, Moments],
    variants: Variants | tuple[Sequence[VariantCount], Sequence[VariantCount]] | None = None,
) -> DriftReport:
    """The report as of `as_of` from each signal's moments in the recent window and in both baselines (and the
    windows' variants, for `recent_variants`); the same inputs, in any order, give the same report."""
    empty = Moments()
    config = cast(DriftSettings, _Overrides(config))
    states: list[SignalState] = []
    for key in sorted({*recent, *same_hours, *trailing}, key=_order):
        got = _compare(config, key, recent.get(key, empty), same_hours.get(key, empty), trailing.get(key, empty))
        if got is not None:
            states.append(got)
    tested = [i for i, s in enumerate(states) if s.p_value is not None]
    q_values = adjusted([p for i in tested if (p := states[i].p_value) is not None])
    for i, q in zip(tested, q_values):
        states[i] = _judged(config, states[i], q)
    new = _new_variants(Variants(*variants) if variants is not None else Variants())
    for i, state in enumerate(states):
        if names := new.get((state.service, state.agent)):
            states[i] = state.model_copy(update={"recent_variants": names})
    return DriftReport(as_of=as_of, recent_seconds=config.recent, signals=states, tested=len(tested))


__all__ = ["MAX_RELATIVE_EFFECT", "Variants", "detect", "raw_effect"]
