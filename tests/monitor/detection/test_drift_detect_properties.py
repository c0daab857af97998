"""Properties of a report over any moments: p-values in [0, 1] and q ≥ p, identical windows never significant, an
effect only on significant signals, and the same report whatever the order of the inputs."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.detection.detect import detect
from monitor.detection.model import Moments, SignalId
from monitor.detection.signals import SIGNALS, Statistic

from .builders import config, key, ratio, sample

AS_OF = 1_764_770_400.0
Windows = tuple[dict[SignalId, Moments], dict[SignalId, Moments], dict[SignalId, Moments]]


@st.composite
def moments_of(draw: st.DrawFn, signal: str) -> Moments:
    n = draw(st.integers(min_value=0, max_value=5000))
    if SIGNALS[signal].statistic is Statistic.RATIO:
        return ratio(n, draw(st.integers(min_value=0, max_value=n)))
    if n == 0:
        return Moments()
    return sample(n, draw(st.floats(min_value=0, max_value=1e4)), draw(st.floats(min_value=0, max_value=1e3)))


@st.composite
def windows(draw: st.DrawFn) -> Windows:
    """Recent, same-hours and trailing moments of a few signals of a few agents (each may lack a signal)."""
    found: tuple[dict[SignalId, Moments], ...] = ({}, {}, {})
    for agent in draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True)):
        for signal in draw(st.lists(st.sampled_from(sorted(SIGNALS)), min_size=1, max_size=5, unique=True)):
            signal_key = key(signal, "x" if signal in ("tool_share", "score") else "", agent=agent)
            for window in found:
                if draw(st.booleans()):
                    window[signal_key] = draw(moments_of(signal))
    return found[0], found[1], found[2]


def _shuffled(moments: dict[SignalId, Moments], seed: int) -> dict[SignalId, Moments]:
    items = list(moments.items())
    random.Random(seed).shuffle(items)
    return dict(items)


@settings(max_examples=150)
@given(windows())
def test_every_state_is_consistent(inputs: Windows) -> None:
    report = detect(config(), AS_OF, *inputs)
    assert report.tested == sum(s.p_value is not None for s in report.signals)
    for state in report.signals:
        assert (state.p_value is None) == (min(state.baseline.n, state.recent.n) < 30)  # drift.min_samples
        if state.p_value is None:
            assert state.q_value is None and not state.significant
        else:
            assert state.q_value is not None and 0.0 <= state.p_value <= state.q_value <= 1.0
        assert (state.effect != 0.0) == state.significant == (state.direction is not None)
        assert state.worse is None or state.significant


@settings(max_examples=150)
@given(windows())
def test_identical_windows_are_never_significant(inputs: Windows) -> None:
    recent, empty = inputs[0], dict[SignalId, Moments]()
    for same_hours, trailing in ((empty, recent), (recent, empty)):
        report = detect(config(), AS_OF, recent, same_hours, trailing)
        assert not any(s.significant for s in report.signals)


@settings(max_examples=100)
@given(windows(), st.integers(min_value=0, max_value=2**32))
def test_the_report_does_not_depend_on_the_inputs_order(inputs: Windows, seed: int) -> None:
    first = detect(config(), AS_OF, *inputs)
    recent, same_hours, trailing = (_shuffled(m, seed + i) for i, m in enumerate(inputs))
    again = detect(config(), AS_OF, recent, same_hours, trailing)
    assert again == first == detect(config(), AS_OF, *inputs)
