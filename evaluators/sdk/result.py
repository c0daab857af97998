"""What an evaluator returns (EvalResult, or a skip) and what the runner records (EvaluationRecord)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evaluators.signatures.model import Failure

Level = Literal["trace", "agent", "llm", "session"]
LEVELS: tuple[str, ...] = ("trace", "agent", "llm", "session")
TRACE_LEVELS: tuple[str, ...] = ("trace", "agent", "llm")  # the levels dispatched over one trace
DEFAULT_THRESHOLD = 0.5


class SkipReason(StrEnum):
    """Why an evaluation produced no score. A skip is never counted as a score."""

    NEEDS_GROUND_TRUTH = "needs_ground_truth"
    NO_DATA = "no_data"
    NOT_CONFIGURED = "not_configured"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    BUDGET_EXHAUSTED = "budget_exhausted"
    RATE_LIMITED = "rate_limited"  # a judgement the judges' rate/concurrency limits or backlog could not take in time
    NOT_APPLICABLE = "not_applicable"
    SAMPLED_OUT = "sampled_out"
    NO_PAIR = "no_pair"  # a pairwise judge found no trace of the other variant to compare with
    TIMEOUT = "timeout"
    ERROR = "error"

    @classmethod
    def parse(cls, reason: SkipReason | str) -> SkipReason:
        """The SkipReason for `reason` (member or its string value); ValueError naming the valid ones."""
        if isinstance(reason, cls):
            return reason
        try:
            return cls(reason)
        except ValueError:
            valid = ", ".join(r.value for r in cls)
            raise ValueError(f"unknown skip reason {reason!r}; expected one of: {valid}") from None


def check_score(score: Any, what: str = "score") -> float:
    """`score` as a float in [0, 1]; ValueError/TypeError otherwise (NaN and bools are rejected)."""
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise TypeError(f"{what} must be a number in [0, 1], got {type(score).__name__} ({score!r})")
    value = float(score)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {score!r}")
    return value


@dataclass(frozen=True, slots=True)
class EvalResult:
    """One evaluation's outcome: a score in [0, 1], or a skip (`EvalResult.skip(reason)`).

    `passed` is the verdict, and there is one rule for it: `score >= threshold`, with the threshold of the
    evaluator that produced the result. `BaseEvaluator.run` sets it (see `resolve`); a `passed` given by
    an evaluator is replaced by that verdict (with a warning when they differ).

    `failure`: what failed, when the result fails (`evaluators.signatures.Failure`: the step, the error type, a
    message); failing results are grouped into failure signatures by it (by the masked explanation without it).
    """

    score: float | None
    passed: bool | None = None
    explanation: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    skip_reason: SkipReason | None = None
    failure: Failure | None = None

    def __post_init__(self) -> None:
        if self.skip_reason is not None:
            object.__setattr__(self, "skip_reason", SkipReason.parse(self.skip_reason))
            if self.score is not None or self.passed is not None:
                raise ValueError("a skipped result has no score and no passed verdict")
        elif type(self.score) is not float or not 0.0 <= self.score <= 1.0:  # NaN too: not in [0, 1]
            object.__setattr__(self, "score", check_score(self.score))
        if self.passed is not None and not isinstance(self.passed, bool):
            raise TypeError(f"passed must be a bool or None, got {type(self.passed).__name__}")
        if not isinstance(self.explanation, str):
            raise TypeError(f"explanation must be a str, got {type(self.explanation).__name__}")
        if not isinstance(self.details, dict):
            raise TypeError(f"details must be a dict, got {type(self.details).__name__}")
        if self.failure is not None and not isinstance(self.failure, Failure):
            raise TypeError(f"failure must be an evaluators.signatures.Failure, got {type(self.failure).__name__}")

    @classmethod
    def skip(cls, reason: SkipReason | str, message: str = "", details: dict[str, Any] | None = None) -> EvalResult:
        """A result with no score, for `reason` (a SkipReason or its string value)."""
        return cls(score=None, explanation=message, details=dict(details or {}), skip_reason=SkipReason.parse(reason))

    @property
    def is_skipped(self) -> bool:
        return self.skip_reason is not None

    def resolve(self, threshold: float = DEFAULT_THRESHOLD) -> EvalResult:
        """A copy with `passed = score >= threshold` (whatever `passed` was); a skip is returned as it is."""
        # An evaluator's threshold was checked when it was set: only a value from elsewhere is checked here.
        limit = (
            threshold if type(threshold) is float and 0.0 <= threshold <= 1.0 else check_score(threshold, "threshold")
        )
        if self.skip_reason is not None:
            return self
        assert self.score is not None  # a result that is not a skip has a score (checked in __post_init__)
        passed = self.score >= limit
        if self.passed is passed:
            return self
        # Every field but `passed` was validated when this result was built: copy without validating again.
        resolved = object.__new__(EvalResult)
        for name in ("score", "explanation", "details", "skip_reason", "failure"):
            object.__setattr__(resolved, name, getattr(self, name))
        object.__setattr__(resolved, "passed", passed)
        return resolved


class EvaluationRecord(BaseModel):
    """One evaluator's result on one dispatch unit (a trace, an agent, or an LLM call), as the runner emits it."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str
    evaluator: str
    level: Level = "trace"
    span_id: str | None = None
    agent_name: str | None = None
    model: str | None = None
    service: str | None = None
    task_id: str | None = None
    score: float | None = None
    passed: bool | None = None
    skipped: bool = False
    skip_reason: SkipReason | None = None
    explanation: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    duration_ms: float = 0.0
    # what failed, as the evaluator stated it (EvalResult.failure); the offline reports group failures by it
    failure: Failure | None = None

    @property
    def scored(self) -> bool:
        """True when this record carries a score (not a skip)."""
        return not self.skipped and self.score is not None
