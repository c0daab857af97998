"""Reports from synthetic moments: the changes people should hear about are found, the ones below the minimum
effect or the minimum samples are not, improvements are significant but not active, and the baseline falls back
to the trailing window when the same hours hold too little."""

from __future__ import annotations

import pytest

from monitor.detection.detect import MAX_RELATIVE_EFFECT, Variants, detect
from monitor.detection.model import BaselineKind, Direction, Moments, SignalId, SignalKind, SignalState
from monitor.store.signal_rows import VariantCount

from .builders import config, key, ratio, sample

AS_OF = 1_764_770_400.0


def one(recent: Moments, baseline: Moments, signal_key: SignalId, **changes: object) -> SignalState:
    """The state of one signal tested alone, its baseline in the same hours."""
    report = detect(config(**changes), AS_OF, {signal_key: recent}, {signal_key: baseline}, {})
    assert [s.signal for s in report.signals] == [signal_key.signal]
    return report.signals[0]


def test_an_error_rate_from_1_to_5_percent_is_a_regression() -> None:
    state = one(ratio(300, 15), ratio(2100, 21), key("error_rate"))
    assert state.active and state.kind is SignalKind.QUALITY
    assert state.direction is Direction.UP and state.worse is True
    assert state.effect == pytest.approx(0.04)
    assert state.baseline_kind is BaselineKind.SAME_HOURS
    assert state.p_value is not None and state.q_value == state.p_value < 0.001


def test_an_error_rate_from_1_to_1_3_percent_is_below_the_minimum_effect() -> None:
    recent, baseline = ratio(1_000_000, 13_000), ratio(7_000_000, 70_000)
    tested = one(recent, baseline, key("error_rate"), min_effect={"absolute": 0, "relative": 0})
    assert tested.significant and tested.q_value is not None and tested.q_value < 1e-10  # surely different...
    state = one(recent, baseline, key("error_rate"))
    assert not state.significant and not state.active  # ...but too small to matter: its test is not even run
    assert state.p_value == 1.0 and state.q_value == 1.0
    assert state.effect == 0.0 and state.direction is None and state.worse is None


def test_a_doubled_response_length_is_behaviour_drift() -> None:
    state = one(sample(100, 360, 120), sample(600, 180, 60), key("response_length"))
    assert state.active and state.kind is SignalKind.BEHAVIOUR and state.worse is None
    assert state.direction is Direction.UP and state.effect == pytest.approx(1.0)


def test_a_tool_no_longer_called_is_drift() -> None:
    state = one(ratio(100, 0), ratio(500, 450), key("tool_share", "search"))
    assert state.active and state.direction is Direction.DOWN and state.effect == pytest.approx(-0.9)


def test_a_judge_score_down_by_a_tenth_is_a_regression() -> None:
    state = one(sample(100, 0.7, 0.15), sample(400, 0.8, 0.15), key("score", "helpfulness"))
    assert state.active and state.worse is True and state.effect == pytest.approx(-0.1)


def test_a_cost_up_by_half_is_drift() -> None:
    state = one(sample(100, 0.015, 0.004), sample(300, 0.01, 0.004), key("cost"))
    assert state.active and state.effect == pytest.approx(0.5)


def test_a_quality_change_for_the_better_is_significant_but_not_active() -> None:
    state = one(ratio(300, 3), ratio(2100, 105), key("error_rate"))
    assert state.significant and state.direction is Direction.DOWN
    assert state.worse is False and not state.active
    report = detect(config(), AS_OF, {key("error_rate"): state.recent}, {key("error_rate"): state.baseline}, {})
    assert report.changes() == [] and report.signals[0].significant


def test_small_samples_are_never_tested() -> None:
    signal_key = key("error_rate")
    state = one(ratio(29, 29), ratio(2100, 0), signal_key)
    assert state.p_value is None and state.q_value is None and not state.significant
    report = detect(config(), AS_OF, {signal_key: ratio(29, 29)}, {signal_key: ratio(2100, 0)}, {})
    assert report.tested == 0 and report.signals[0].baseline == ratio(2100, 0)  # still exported


def test_a_signal_with_baseline_data_only_is_reported_untested() -> None:
    report = detect(config(), AS_OF, {}, {key("latency"): sample(500, 2.0, 0.5)}, {})
    assert [(s.signal, s.p_value, s.recent) for s in report.signals] == [("latency", None, Moments())]


def test_too_few_same_hours_fall_back_to_the_trailing_window() -> None:
    signal_key = key("error_rate")
    report = detect(
        config(), AS_OF, {signal_key: ratio(300, 15)}, {signal_key: ratio(20, 0)}, {signal_key: ratio(900, 9)}
    )
    (state,) = report.signals
    assert state.baseline_kind is BaselineKind.TRAILING and state.baseline == ratio(900, 9) and state.active


def test_the_same_hours_are_preferred_when_they_hold_enough() -> None:
    signal_key = key("error_rate")
    report = detect(
        config(), AS_OF, {signal_key: ratio(300, 3)}, {signal_key: ratio(300, 3)}, {signal_key: ratio(900, 90)}
    )
    (state,) = report.signals
    assert state.baseline_kind is BaselineKind.SAME_HOURS and not state.significant


def test_a_magnitude_from_zero_is_a_change_with_the_capped_effect() -> None:
    state = one(sample(50, 2.0, 1.0), sample(300, 0.0, 0.0), key("tool_calls"))
    assert state.active and state.effect == MAX_RELATIVE_EFFECT and state.direction is Direction.UP


def test_disabled_and_excluded_signals_are_left_out() -> None:
    moments = {key("error_rate"): ratio(300, 15), key("tool_share", "search"): ratio(300, 0)}
    baseline = {key("error_rate"): ratio(2100, 21), key("tool_share", "search"): ratio(2100, 2000)}
    off = config(exclude=["tool_share:search"], signals={"error_rate": {"enabled": False}})
    assert detect(off, AS_OF, moments, baseline, {}).signals == []
    assert len(detect(config(), AS_OF, moments, baseline, {}).signals) == 2


def test_overrides_set_a_signals_own_minimums() -> None:
    signal_key = key("error_rate")
    strict = {"signals": {"error_rate": {"min_effect": {"absolute": 0.1, "relative": 0.2}}}}
    assert not one(ratio(300, 15), ratio(2100, 21), signal_key, **strict).significant
    assert (
        one(ratio(300, 15), ratio(2100, 21), signal_key, signals={"error_rate": {"min_samples": 400}}).p_value is None
    )


def test_q_values_are_adjusted_over_every_signal_and_agent() -> None:
    """A change that is significant alone is not among many unchanged signals of other agents."""
    signal_key = key("error_rate")
    alone = one(ratio(300, 12), ratio(2100, 21), signal_key)
    assert alone.significant
    nulls = {key("error_rate", agent=f"a{i}"): ratio(2100, 21) for i in range(200)}
    report = detect(config(), AS_OF, {signal_key: ratio(300, 12), **nulls}, {signal_key: ratio(2100, 21), **nulls}, {})
    assert report.tested == 201
    (state,) = [s for s in report.signals if s.agent == "planner"]
    assert state.q_value is not None and state.p_value is not None and state.q_value > state.p_value
    assert not state.significant


def test_new_variants_are_named_on_their_agents_signals() -> None:
    signal_key = key("response_length")
    variants = Variants(
        recent=[VariantCount("shop", "planner", "1.4", 10), VariantCount("shop", "planner", "1.5", 90)],
        baseline=[VariantCount("shop", "planner", "1.4", 500), VariantCount("shop", "other", "1.5", 9)],
    )
    report = detect(
        config(), AS_OF, {signal_key: sample(100, 360, 120)}, {signal_key: sample(600, 180, 60)}, {}, variants
    )
    assert report.signals[0].recent_variants == ("1.5",)
    plain = detect(config(), AS_OF, {signal_key: sample(100, 360, 120)}, {signal_key: sample(600, 180, 60)}, {})
    assert plain.signals[0].recent_variants == ()


def test_the_report_says_its_window_and_time() -> None:
    report = detect(config(recent="15m"), AS_OF, {}, {}, {})
    assert (report.as_of, report.recent_seconds, report.signals, report.tested) == (AS_OF, 900.0, [], 0)
