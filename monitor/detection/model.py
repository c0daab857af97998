"""What drift detection produces (the shared model of the detector, the metrics, the rules, the Changes page, its
API and the `changes` command).

A *signal* is one number per trace (or per result, or per conversation) of one (service, agent): an evaluator's
pass ratio or score, the error rate, the share of traces calling a tool, LLM and tool calls per trace, response
length, tokens, cost, latency; for conversations, turns and how they end. `signals.py` lists them.

Each run of the detector (`DriftReport`, as of a time aligned to `drift.interval`, so that every replica computes
the same report from the same stored rows) compares each signal's recent window with its baseline: the same
hours of the previous days (`same_hours`), or the trailing window before the recent one (`trailing`) when there
is less history.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class SignalKind(StrEnum):
    """`quality`: worse is a regression (AgentQualityRegression); `behaviour`: a change either way is drift
    (AgentBehaviourDrift)."""

    QUALITY = "quality"
    BEHAVIOUR = "behaviour"


class Statistic(StrEnum):
    """How a signal is tested: `ratio`: a proportion (k of n; its effect in points, absolute); `mean`: a mean of
    per-item values (Welch's t-test from the windows' counts, sums and sums of squares; its effect relative)."""

    RATIO = "ratio"
    MEAN = "mean"


class Scale(StrEnum):
    """How a signal's effect is measured: `unit` values lie in [0, 1] (ratios, judge scores): the effect is in
    points, recent − baseline (`min_effect.absolute`); `magnitude` values are counts, lengths, tokens, dollars or
    seconds: the effect is relative, recent / baseline − 1 (`min_effect.relative`)."""

    UNIT = "unit"
    MAGNITUDE = "magnitude"


class BaselineKind(StrEnum):
    SAME_HOURS = "same_hours"  # the recent window's hours on each of the previous days (drift.baseline)
    TRAILING = "trailing"  # the trailing window before the recent one (drift.trailing)


class Direction(StrEnum):
    UP = "up"
    DOWN = "down"


class Moments(BaseModel):
    """A window's sufficient statistics of a signal: n items, the sum and the sum of squares of their values (a
    ratio's values are 0/1: `total` is k)."""

    model_config = ConfigDict(frozen=True)

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def __add__(self, other: Moments) -> Moments:
        n, total, squares = self.n + other.n, self.total + other.total, self.squares + other.squares
        return Moments(n=n, total=total, squares=squares)


class SignalId(BaseModel):
    """Which signal of which agent: `signal` names it (signals.py), `subject` the evaluator, tool or conversation
    ending it is about ("" when none)."""

    model_config = ConfigDict(frozen=True)

    service: str
    agent: str  # "" when the traces name none
    signal: str
    subject: str = ""


class SignalState(SignalId):
    """One signal's comparison in one report: every signal with enough data has one (its baseline is exported
    whether or not it drifted)."""

    kind: SignalKind
    statistic: Statistic
    scale: Scale
    baseline_kind: BaselineKind
    baseline: Moments
    recent: Moments
    effect: float = 0.0  # points (unit scale) or relative (magnitude): Scale; 0 when not significant
    p_value: float | None = None  # None: not tested (too few samples in either window)
    q_value: float | None = None  # the p-value adjusted for every signal tested in the report (Benjamini–Hochberg)
    significant: bool = False  # q ≤ drift.false_discovery_rate, the effect past min_effect, samples past min_samples
    direction: Direction | None = None  # of a significant change
    worse: bool | None = None  # a quality signal's significant change for the worse (None: behaviour, or none)
    since: float | None = None  # epoch seconds: when this change was first seen significant (kept in the store)
    recent_variants: tuple[str, ...] = ()  # the variants (versions) in the recent window that the baseline lacks

    @property
    def active(self) -> bool:
        """Alerting: a quality signal worse than its baseline, or a behaviour signal changed either way."""
        return self.significant and (self.kind is SignalKind.BEHAVIOUR or bool(self.worse))


class DriftReport(BaseModel):
    """One run of the detector."""

    as_of: float  # epoch seconds: the end of the recent window
    recent_seconds: float
    signals: list[SignalState] = Field(default_factory=list)
    tested: int = 0  # signals with a p-value (the family the false discovery rate is controlled over)
    complete: bool = True  # False: a read of the store failed or was cut (the report keeps the last good values)
    duration_seconds: float = 0.0  # how long the report took to make (its reads and tests)

    def changes(self) -> list[SignalState]:
        """The active changes, largest effect first (points and relative effects ranked together by |effect|)."""
        return sorted((s for s in self.signals if s.active), key=lambda s: -abs(s.effect))


__all__ = [
    "BaselineKind",
    "Direction",
    "DriftReport",
    "Moments",
    "Scale",
    "SignalId",
    "SignalKind",
    "SignalState",
    "Statistic",
]
