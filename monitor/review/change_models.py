"""Drift's changes as the review shows them (issue 41): what `/api/v1/changes`, the Changes page and
`agent-monitor changes` show of the detector's latest `DriftReport` (monitor/detection/model.py).

Each item is one signal of one (service, agent) compared between the recent window and its baseline, with the
95 % interval of each window's mean (normal approximation: a ratio's p ± 1.96·sqrt(p(1−p)/n), a mean's
± 1.96·sd/sqrt(n)), a one-line summary for people and the review page's link to the recent window's traces.
Times are Unix seconds (UTC).
"""

from __future__ import annotations

from typing import Literal

from monitor.review.api_model import ApiModel

ChangeKind = Literal["quality", "behaviour"]
BaselineKind = Literal["same_hours", "trailing"]


class ChangeWindow(ApiModel):
    """One window of a signal: its mean (None: no item), items, and the 95 % interval of the mean."""

    mean: float | None = None
    n: int = 0
    low: float | None = None
    high: float | None = None


class ChangeBaseline(ChangeWindow):
    """The baseline window; `kind`: the same hours of the previous days, or the trailing window before."""

    kind: BaselineKind


class ChangeItem(ApiModel):
    """One signal's comparison: `effect` is in points (recent − baseline, `scale` unit) or relative (recent /
    baseline − 1, `scale` magnitude); `active`: a quality signal worse, or a behaviour signal changed."""

    service: str
    agent: str  # "" when the traces name none
    signal: str
    subject: str = ""  # the evaluator, tool or conversation ending ("" when none)
    kind: ChangeKind
    statistic: Literal["ratio", "mean"]
    scale: Literal["unit", "magnitude"]
    description: str
    unit: str
    baseline: ChangeBaseline
    recent: ChangeWindow
    effect: float
    direction: Literal["up", "down"] | None = None
    worse: bool | None = None
    significant: bool
    active: bool
    p_value: float | None = None
    q_value: float | None = None
    since: float | None = None  # when the change was first seen significant
    recent_variants: list[str] = []  # the variants of the recent window that the baseline lacks
    summary: str
    traces_url: str  # the review page's list of the recent window's results of this service and agent


class ChangesPage(ApiModel):
    """The latest report's changes, largest |effect| first: the active ones, or every tested signal (`all`).
    `matched`: the items matching the filters before `limit`; `complete` False: a read of the store failed
    (the report keeps the last good values)."""

    as_of: float  # the end of the recent window
    recent_seconds: float
    recent_since: float  # as_of − recent_seconds
    complete: bool
    tested: int  # signals tested in the report
    all: bool
    matched: int
    items: list[ChangeItem]


__all__ = ["BaselineKind", "ChangeBaseline", "ChangeItem", "ChangeKind", "ChangeWindow", "ChangesPage"]
