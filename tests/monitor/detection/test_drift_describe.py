"""A change in one sentence: the values formatted by unit, the baseline it is measured against, since when and
the new versions."""

from __future__ import annotations

from monitor.detection.describe import describe, duration_phrase, format_value, window_phrase
from monitor.detection.detect import Variants, detect
from monitor.detection.model import BaselineKind, Moments, SignalId, SignalState
from monitor.store.signal_rows import VariantCount

from .builders import config, key, ratio, sample

AS_OF = 1_764_770_400.0  # 2025-12-03 14:00 UTC
SINCE = AS_OF + 300  # 14:05


def state(
    signal_key: SignalId, recent: Moments, baseline: Moments, *, trailing: bool = False, **more: object
) -> SignalState:
    same, trail = ({}, {signal_key: baseline}) if trailing else ({signal_key: baseline}, {})
    variants = more.pop("variants", None)
    (found,) = detect(config(), AS_OF, {signal_key: recent}, same, trail, variants).signals  # type: ignore[arg-type]
    return found.model_copy(update={"since": SINCE, **more})


def test_a_ratio_against_the_same_hours() -> None:
    tool = state(key("tool_success"), ratio(300, 267), ratio(2100, 2037))
    assert describe(tool, config(), now=AS_OF) == (
        "tool_success 0.97 → 0.89 against the same hours of the last 7 days, since 14:05 UTC"
    )


def test_a_magnitude_against_the_trailing_window_with_a_new_version() -> None:
    variants = Variants([VariantCount("shop", "planner", "1.5", 100)], [VariantCount("shop", "planner", "1.4", 9)])
    length = state(key("response_length"), sample(100, 410, 90), sample(600, 180, 60), trailing=True, variants=variants)
    assert describe(length, config(), now=AS_OF) == (
        "response_length mean 180 → 410 chars (+128 %) against the trailing 24 h, since 14:05 UTC, with new version 1.5"
    )


def test_a_subject_and_an_older_since() -> None:
    score = state(key("score", "helpfulness"), sample(100, 0.7, 0.1), sample(400, 0.8, 0.1))
    assert describe(score, now=AS_OF + 86400) == (
        "score:helpfulness mean 0.80 → 0.70 against the same hours of the previous days, since 2025-12-03 14:05 UTC"
    )


def test_without_since() -> None:
    cost = state(key("cost"), sample(100, 0.015, 0.004), sample(300, 0.01, 0.004)).model_copy(update={"since": None})
    assert describe(cost) == "cost mean 0.01 → 0.015 USD (+50 %) against the same hours of the previous days"


def test_values_by_unit() -> None:
    assert format_value(0.8912, "ratio") == "0.89"
    assert format_value(0.012345, "USD") == "0.01235 USD"
    assert format_value(2.345, "seconds") == "2.35 s"
    assert format_value(2.345, "calls") == "2.35 calls"
    assert format_value(1234.4, "tokens") == "1234 tokens"
    assert format_value(None, "ratio") == "–"


def test_window_phrases() -> None:
    assert window_phrase(BaselineKind.SAME_HOURS, config(baseline="1d")) == "the same hours of the previous day"
    assert window_phrase(BaselineKind.TRAILING, config(trailing="6h")) == "the trailing 6 h"
    assert window_phrase(BaselineKind.TRAILING) == "the trailing window"
    assert [duration_phrase(s) for s in (7 * 86400, 86400, 1800, 45, 5400)] == [
        "7 days",
        "24 h",
        "30 min",
        "45 s",
        "90 min",
    ]
