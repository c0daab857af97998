"""Statistics over evaluation results: pure functions, scored results only, skips counted apart.

Every statistic of an empty input is None (never an exception). Percentiles interpolate linearly
between the closest ranks, like numpy.percentile's default method.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from .result import EvaluationRecord

GroupBy = Literal["agent", "model", "service"]
PERCENTILES: tuple[int, ...] = (50, 75, 90, 95, 99)
DEFAULT_AGGREGATIONS: tuple[str, ...] = ("mean", "p50", "p95", "pass_rate")
_GROUP_FIELDS = {"agent": "agent_name", "model": "model", "service": "service"}
_PERCENTILE_NAME = re.compile(r"^p(\d+(?:\.\d+)?)$")


def scores(records: Iterable[EvaluationRecord]) -> list[float]:
    """The scores of the scored (not skipped) records."""
    return [r.score for r in records if not r.skipped and r.score is not None]


def count(values: Sequence[float]) -> int:
    return len(values)


def mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def minimum(values: Sequence[float]) -> float | None:
    return min(values) if values else None


def maximum(values: Sequence[float]) -> float | None:
    return max(values) if values else None


def variance(values: Sequence[float]) -> float | None:
    """Sample variance (n - 1 denominator); None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    center = math.fsum(values) / n
    return math.fsum((v - center) ** 2 for v in values) / (n - 1)


def stdev(values: Sequence[float]) -> float | None:
    """Sample standard deviation; None for fewer than two values."""
    var = variance(values)
    return math.sqrt(var) if var is not None else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between closest ranks (numpy's default)."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {q!r}")
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * (q / 100.0)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    a, b = ordered[low], ordered[high]
    if fraction >= 0.5:  # numpy's symmetric lerp, for bit-identical results
        return b - (b - a) * (1 - fraction)
    return a + (b - a) * fraction


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def pass_rate(records: Iterable[EvaluationRecord]) -> float | None:
    """Share of scored records that passed (records without a verdict are left out); None if none."""
    verdicts = [r.passed for r in records if not r.skipped and r.score is not None and r.passed is not None]
    return sum(verdicts) / len(verdicts) if verdicts else None


def skip_counts(records: Iterable[EvaluationRecord]) -> dict[str, int]:
    """How many records were skipped, by reason (reason value → count)."""
    counter = Counter(str(r.skip_reason) if r.skip_reason is not None else "unknown" for r in records if r.skipped)
    return dict(sorted(counter.items()))


_SCORE_FUNCTIONS: dict[str, Callable[[Sequence[float]], Any]] = {
    "count": count,
    "mean": mean,
    "median": median,
    "min": minimum,
    "max": maximum,
    "stdev": stdev,
    "variance": variance,
}


def is_aggregation(name: str) -> bool:
    """True for a known aggregation name: count, mean, median, min, max, stdev, variance, pass_rate, p<q>."""
    if name in _SCORE_FUNCTIONS or name == "pass_rate":
        return True
    match = _PERCENTILE_NAME.match(name)
    return match is not None and 0 <= float(match.group(1)) <= 100


def compute(name: str, records: Sequence[EvaluationRecord]) -> Any:
    """One named aggregation over records (scored ones only)."""
    if name == "pass_rate":
        return pass_rate(records)
    values = scores(records)
    if name in _SCORE_FUNCTIONS:
        return _SCORE_FUNCTIONS[name](values)
    match = _PERCENTILE_NAME.match(name)
    if match:
        return percentile(values, float(match.group(1)))
    raise ValueError(f"unknown aggregation {name!r}")


class ScoreSummary(BaseModel):
    """The statistics of one evaluator's results (within one group, when grouped)."""

    evaluator: str
    level: str
    group_by: GroupBy | None = None
    group: str | None = None
    total: int = 0
    count: int = 0
    skipped: int = 0
    skip_counts: dict[str, int] = Field(default_factory=dict)
    passed: int = 0
    failed: int = 0
    pass_rate: float | None = None
    mean: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    stdev: float | None = None
    variance: float | None = None
    p50: float | None = None
    p75: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None


def summarize(
    records: Sequence[EvaluationRecord], evaluator: str = "", group_by: GroupBy | None = None, group: str | None = None
) -> ScoreSummary:
    """Every statistic of these records (scores of the scored ones; skips only counted)."""
    values = scores(records)
    percentiles = {f"p{q}": percentile(values, q) for q in PERCENTILES}
    return ScoreSummary(
        evaluator=evaluator or (records[0].evaluator if records else ""),
        level=str(records[0].level) if records else "",
        group_by=group_by,
        group=group,
        total=len(records),
        count=len(values),
        skipped=sum(1 for r in records if r.skipped),
        skip_counts=skip_counts(records),
        passed=sum(1 for r in records if not r.skipped and r.score is not None and r.passed is True),
        failed=sum(1 for r in records if not r.skipped and r.score is not None and r.passed is False),
        pass_rate=pass_rate(records),
        mean=mean(values),
        median=median(values),
        min=minimum(values),
        max=maximum(values),
        stdev=stdev(values),
        variance=variance(values),
        **percentiles,
    )


def aggregate(records: Iterable[EvaluationRecord], group_by: GroupBy | None = None) -> list[ScoreSummary]:
    """One summary per evaluator (per evaluator and group with `group_by`), sorted by evaluator then group.

    Records whose group field is unset fall in the group None.
    """
    if group_by is not None and group_by not in _GROUP_FIELDS:
        raise ValueError(f"group_by must be None or one of {sorted(_GROUP_FIELDS)}, got {group_by!r}")
    buckets: dict[tuple[str, str | None], list[EvaluationRecord]] = {}
    for record in records:
        group = getattr(record, _GROUP_FIELDS[group_by]) if group_by else None
        buckets.setdefault((record.evaluator, group), []).append(record)
    ordered = sorted(buckets.items(), key=lambda item: (item[0][0], item[0][1] is not None, item[0][1] or ""))
    return [summarize(rs, evaluator, group_by, group) for (evaluator, group), rs in ordered]
