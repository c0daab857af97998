"""The review's failure signatures (issue 25): what `/api/v1/signatures`, the Failures page and the CLI show, and
the pure rules they share (status, trend buckets, impact order, "new in the candidate").

A signature groups the failing results that failed the same way (`evaluators.signatures`); the store keeps one
row per signature (`signatures`) and points each failing result to it (`results.signature`). Times are Unix
seconds (UTC).
"""

from __future__ import annotations

import math
from typing import Literal, Protocol

from monitor.review.api_model import ApiModel

SignatureStatus = Literal["new", "ongoing", "regressed", "resolved"]
DEFAULT_RANGE = 24 * 3600.0  # the range when `since` is not given
MIN_POINTS, MAX_POINTS = 12, 48  # trend points: one an hour, within these bounds
HOUR = 3600.0
CANDIDATE_FACTOR = 5.0  # "far more often in the candidate": at least this many times the baseline's per trace


class SignatureFilter(ApiModel):
    """Which failing results count: `since` inclusive, `until` exclusive (both set: the range); None means any."""

    since: float
    until: float
    evaluator: str | None = None
    service: str | None = None
    agent: str | None = None
    variant: str | None = None


class SignatureItem(ApiModel):
    """One signature with its figures over the range: results and traces in it, the previous range's results
    (of the same length, just before), and the trend (`trend[i]`: results from `trend_start + i * trend_step`)."""

    id: str
    version: str
    evaluator: str
    level: str
    agent: str
    step_kind: str
    step_name: str
    error_type: str
    template: str
    example: str
    first_seen: float
    last_seen: float
    count: int  # every result ever counted for it (the store's total)
    status: SignatureStatus
    regressed_at: float | None = None
    results: int  # failing results in the range
    traces: int  # distinct traces among them
    previous_results: int  # in the previous range of the same length
    growth: float | None = None  # results / previous_results - 1; None when the previous range had none
    services: list[str] = []
    agents: list[str] = []
    models: list[str] = []
    variants: list[str] = []
    versions: list[str] = []
    example_traces: list[str] = []  # newest last
    trend: list[int] = []
    trend_start: float = 0.0
    trend_step: float = HOUR


class SignaturesPage(ApiModel):
    """Signatures by impact (results in the range, then growth), one page; `next_cursor` None on the last."""

    since: float
    until: float
    items: list[SignatureItem]
    next_cursor: str | None = None


class SignatureVerdict(ApiModel):
    """One failing result of a trace; `signature` its signature id (None for results from before signatures)."""

    evaluator: str
    level: str
    evaluated_at: float
    explanation: str | None = None
    score: float | None = None
    signature: str | None = None
    agent: str | None = None
    model: str | None = None
    span_id: str | None = None


class SignatureTrace(ApiModel):
    """A trace with the signature: every failing verdict it has (this signature's and the others')."""

    trace_id: str
    evaluated_at: float  # its newest result with the signature
    service: str | None = None
    variant: str = ""
    verdicts: list[SignatureVerdict]


class SignatureDetail(ApiModel):
    """One signature over the range and its traces, newest first, one page (`next_cursor` None on the last)."""

    signature: SignatureItem
    traces: list[SignatureTrace]
    next_cursor: str | None = None


class CandidateSignature(ApiModel):
    """A signature over a comparison's window in its two variants, per trace of each."""

    id: str
    evaluator: str
    step_kind: str
    step_name: str
    error_type: str
    template: str
    candidate_results: int
    baseline_results: int
    candidate_per_trace: float
    baseline_per_trace: float
    only_in_candidate: bool


class CandidateSignatures(ApiModel):
    """The signatures seen only, or `CANDIDATE_FACTOR` times more often per trace, in `candidate`."""

    candidate: str
    baseline: str
    since: float
    until: float
    candidate_traces: int
    baseline_traces: int
    items: list[CandidateSignature]


class SignatureReader(Protocol):
    """The store's signature reads (monitor/review/signature_reader.py); `now` and `resolve_after` give statuses."""

    def signatures(
        self, where: SignatureFilter, limit: int, cursor: str | None, now: float, resolve_after: float
    ) -> SignaturesPage:
        """Signatures by impact over the range; ValueError for a cursor this store did not issue."""
        ...

    def signature(
        self, signature: str, where: SignatureFilter, limit: int, cursor: str | None, now: float, resolve_after: float
    ) -> SignatureDetail | None:
        """One signature and its traces, newest first; None when the store has no such signature."""
        ...

    def candidate_signatures(
        self, candidate: str, baseline: str, since: float, until: float, limit: int = 20
    ) -> CandidateSignatures:
        """The signatures seen only, or far more often per trace, in the candidate variant."""
        ...


def status_of(
    first_seen: float, last_seen: float, regressed_at: float | None, now: float, resolve_after: float
) -> SignatureStatus:
    """The contract's status: resolved, else regressed, else new, else ongoing."""
    if now - last_seen >= resolve_after:
        return "resolved"
    if regressed_at is not None and now - regressed_at < resolve_after:
        return "regressed"
    if now - first_seen < resolve_after:
        return "new"
    return "ongoing"


def trend_step(since: float, until: float) -> float:
    """Seconds per trend point: an hour, unless that gives fewer than MIN_POINTS or more than MAX_POINTS."""
    span = max(until - since, 1.0)
    points = min(max(math.ceil(span / HOUR), MIN_POINTS), MAX_POINTS)
    return span / points


def trend_points(since: float, until: float) -> int:
    return round((until - since) / trend_step(since, until)) if until > since else 0


def growth(results: int, previous: int) -> float | None:
    return results / previous - 1 if previous else None


def impact_key(signature: str, results: int, previous: int) -> tuple[int, int, str]:
    """The sort key: most results in the range, then the largest growth over the previous range, then the id."""
    return -results, -(results - previous), signature


def new_in_candidate(candidate_rate: float, baseline_rate: float, baseline_results: int) -> bool:
    """Seen only in the candidate, or at least CANDIDATE_FACTOR times as often per trace."""
    return candidate_rate > 0 and (baseline_results == 0 or candidate_rate >= CANDIDATE_FACTOR * baseline_rate)
