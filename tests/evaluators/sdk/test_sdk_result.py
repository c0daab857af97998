"""EvalResult validation, skips, threshold resolution and EvaluationRecord."""

from __future__ import annotations

import math

import pytest

from evaluators.sdk import EvalResult, EvaluationRecord, SkipReason


@pytest.mark.parametrize("score", [0, 0.0, 0.25, 1, 1.0])
def test_scores_in_range_are_kept_as_floats(score: float) -> None:
    result = EvalResult(score)
    assert result.score == float(score)
    assert isinstance(result.score, float)
    assert not result.is_skipped
    assert result.skip_reason is None


@pytest.mark.parametrize("score", [-0.01, 1.01, 2, math.inf, -math.inf])
def test_out_of_range_scores_are_rejected(score: float) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        EvalResult(score)


def test_nan_is_rejected() -> None:
    with pytest.raises(ValueError, match="nan"):
        EvalResult(math.nan)


@pytest.mark.parametrize("score", ["0.5", True, None, [0.5]])
def test_non_numbers_are_rejected(score: object) -> None:
    with pytest.raises(TypeError, match="score must be a number"):
        EvalResult(score)  # type: ignore[arg-type]


def test_passed_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="passed"):
        EvalResult(0.5, passed=1)  # type: ignore[arg-type]


def test_defaults() -> None:
    result = EvalResult(0.5)
    assert result.passed is None
    assert result.explanation == ""
    assert result.details == {}
    assert EvalResult(0.5).details is not result.details


def test_resolve_decides_passed_by_threshold() -> None:
    assert EvalResult(0.5).resolve().passed is True  # default threshold 0.5, inclusive
    assert EvalResult(0.49).resolve().passed is False
    assert EvalResult(0.7).resolve(0.8).passed is False
    assert EvalResult(0.8).resolve(0.8).passed is True
    original = EvalResult(0.3)
    original.resolve()
    assert original.passed is None  # resolve returns a copy


def test_resolve_decides_by_the_threshold_even_over_an_explicit_verdict() -> None:
    assert EvalResult(0.1, passed=True).resolve(0.9).passed is False
    assert EvalResult(0.9, passed=False).resolve(0.1).passed is True
    assert EvalResult(0.0, passed=False).resolve(0.0).passed is True  # threshold 0: everything scored passes


def test_resolve_rejects_a_bad_threshold() -> None:
    with pytest.raises(ValueError, match="threshold"):
        EvalResult(0.5).resolve(1.5)


@pytest.mark.parametrize("reason", ["needs_ground_truth", SkipReason.NEEDS_GROUND_TRUTH])
def test_skip_accepts_enum_and_string(reason: str) -> None:
    skipped = EvalResult.skip(reason, "no task given")
    assert skipped.is_skipped
    assert skipped.score is None
    assert skipped.passed is None
    assert skipped.skip_reason is SkipReason.NEEDS_GROUND_TRUTH
    assert skipped.explanation == "no task given"


def test_skip_reasons_are_the_documented_ones() -> None:
    assert {r.value for r in SkipReason} == {
        "needs_ground_truth",
        "no_data",
        "not_configured",
        "judge_unavailable",
        "budget_exhausted",
        "rate_limited",
        "not_applicable",
        "sampled_out",
        "no_pair",
        "timeout",
        "error",
    }
    assert str(SkipReason.TIMEOUT) == "timeout"  # str() gives the value (metrics labels use it)


def test_unknown_skip_reason_is_rejected_with_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown skip reason 'bored'.*needs_ground_truth"):
        EvalResult.skip("bored")


def test_a_skip_is_not_a_score() -> None:
    skipped = EvalResult.skip("no_data")
    assert skipped.resolve(0.0).passed is None  # never passes, whatever the threshold
    with pytest.raises(ValueError, match="skipped result has no score"):
        EvalResult(0.5, skip_reason=SkipReason.ERROR)


def test_record_defaults_and_copy() -> None:
    record = EvaluationRecord(trace_id="t1", evaluator="e", level="agent", score=0.5, passed=True)
    assert record.scored
    assert record.skipped is False
    assert record.span_id is None
    assert record.duration_ms == 0.0
    skipped = record.model_copy(update={"skipped": True, "skip_reason": "timeout", "score": None})
    assert not skipped.scored
    assert record.scored


def test_record_validates_level_and_reason() -> None:
    with pytest.raises(ValueError):
        EvaluationRecord(trace_id="t", evaluator="e", level="span")
    with pytest.raises(ValueError):
        EvaluationRecord(trace_id="t", evaluator="e", skipped=True, skip_reason="bored")
    record = EvaluationRecord(trace_id="t", evaluator="e", skipped=True, skip_reason="sampled_out")
    assert record.skip_reason is SkipReason.SAMPLED_OUT
