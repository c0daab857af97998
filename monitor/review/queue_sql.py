"""The SQL of the review queue (queue.py), on both databases: Core statements built once per shape of a rule (its
values bound).

A queue rule is a `RuleSpec`: which results it selects, among those evaluated since a time and not reviewed (no
review in force: the `reviews_in_force` partial unique index answers each check). A rule reads the `results` rows
(failing results and skips: skips are never offered, they have no verdict to agree with) newest first by their time
index, and for rules that take passing results also the passing results packed in `traces.passed`, traces newest
first by their time index, each expanded (json_each). Every query has a LIMIT: the queue asks for one more result
than the reviewer has skipped, the backlog counts up to a cap.

The sample is decided by the trace id's last 8 characters read as hex (`sampled_in`): the same results on every
replica and at every visit, independent of the hash of the whole trace id by which the judges sample traces (so a
judge sampling 10% of traces and a queue sampling 10% of its results do not pick the same traces).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Select, and_, bindparam, case, func, null, or_, select

from monitor.review.sql import EMPTY, ONE, ZERO, Columns, R, T, packed
from monitor.store.sql_functions import json_item, json_number, newest_traces_first, trace_row_key
from monitor.store.statements import Statement
from monitor.store.tables import results, reviews, signatures

HEX_TAIL = 8  # characters of the trace id's end that decide the sample
_SPACE = 16**HEX_TAIL
_EPSILON = 1e-9  # a score exactly `margin` away counts as near
MAX_NEW_SIGNATURES = 1000  # the newest signatures a new_signature rule looks at


@dataclass(frozen=True)
class RuleSpec:
    """What one queue rule selects. `evaluators`: None for any; `near`: per evaluator (low, high) bounds of the
    score; `share`: the sample's share of trace ids; `new_since`/`first`: the first `first` results of each
    signature first seen since `new_since`; `failing`: failing results only (else passing ones too); `turn`: set
    when the spec is a rule narrowed to the evaluators whose turn it is (`only`), their number of reviews."""

    rule: str
    evaluators: tuple[str, ...] | None = None
    failing: bool = False
    share: float | None = None
    near: tuple[tuple[str, float, float], ...] = ()
    new_since: float | None = None
    first: int = 0
    turn: int | None = None

    def only(self, names: Collection[str], turn: int) -> RuleSpec:
        """This rule narrowed to the evaluators `names` (each with `turn` reviews)."""
        chosen = sorted(names) if self.evaluators is None else [e for e in self.evaluators if e in names]
        near = tuple(bounds for bounds in self.near if bounds[0] in names)
        return replace(self, evaluators=tuple(chosen), near=near, turn=turn)

    @property
    def empty(self) -> bool:
        """Selects nothing (no evaluator, a zero share, a near rule without thresholds)."""
        if self.evaluators is not None and not self.evaluators:
            return True
        if self.share is not None and self.share <= 0.0:
            return True
        return self.rule == "near_threshold" and not self.near

    @property
    def takes_passing(self) -> bool:
        return not self.failing and self.new_since is None


class Candidate(NamedTuple):
    """A result a rule selected: (evaluated_at, trace_id, evaluator, level, span_id: "" for none, passed, score,
    explanation, service, signature id)."""

    evaluated_at: float
    trace_id: str
    evaluator: str
    level: str
    span_id: str
    passed: bool | None
    score: float | None
    explanation: str | None
    service: str | None
    signature: str | None


def share_bound(share: float) -> str:
    """The hex text below which a trace id's tail is sampled in at `share`."""
    return f"{min(int(share * _SPACE), _SPACE - 1):0{HEX_TAIL}x}"


def sampled_in(trace_id: str, share: float) -> bool:
    """The sample's choice, as the SQL makes it (for a trace id of hex digits)."""
    return share >= 1.0 or (share > 0.0 and trace_id.lower()[-HEX_TAIL:] < share_bound(share))


class QueueQuery(NamedTuple):
    """A rule's statement over one source (newest first, LIMIT bound), the count of its rows, their values."""

    rows: Statement
    counted: Statement
    params: dict[str, Any]


class _Shape(NamedTuple):
    """What a rule's statements depend on (its values are bound): failing only, an evaluator list, a sample, how
    many near bounds, a signature rule."""

    failing: bool
    evaluators: bool
    sampled: bool
    near: int
    new: bool


def _shape(spec: RuleSpec) -> _Shape:
    sampled = spec.share is not None and spec.share < 1.0
    return _Shape(spec.failing, spec.evaluators is not None, sampled, len(spec.near), spec.new_since is not None)


def _params(spec: RuleSpec, since: float, limit: int) -> dict[str, Any]:
    params: dict[str, Any] = {"since": since, "limit": limit}
    if spec.evaluators is not None:
        params["evaluators"] = list(spec.evaluators)
    if spec.share is not None and spec.share < 1.0:
        params["share"] = share_bound(spec.share)
    for n, (name, low, high) in enumerate(spec.near):
        params.update({f"near{n}": name, f"low{n}": low - _EPSILON, f"high{n}": high + _EPSILON})
    if spec.new_since is not None:
        params.update(new_since=spec.new_since, first=spec.first)
    return params


def _statements(rows: Select[Any]) -> tuple[Statement, Statement]:
    """The statement of `rows` and of their number (its LIMIT bounds the count)."""
    return Statement(rows), Statement(select(func.count()).select_from(rows.subquery("c")))


def _tail(column: ColumnElement[str]) -> ColumnElement[str]:
    return func.lower(func.substr(column, func.length(column) - (HEX_TAIL - 1)))


def _near(shape: _Shape, evaluator: ColumnElement[Any], score: ColumnElement[Any]) -> ColumnElement[bool]:
    """The score within the bound evaluator's bounds, for one of the `near` evaluators."""
    return or_(
        *(
            and_(evaluator == bindparam(f"near{n}"), score >= bindparam(f"low{n}"), score <= bindparam(f"high{n}"))
            for n in range(shape.near)
        )
    )


def _unreviewed(trace: Any, evaluator: Any, level: Any, span: Any) -> ColumnElement[bool]:
    v = reviews.alias("v")
    reviewed = select(ONE).where(v.c.trace_id == trace, v.c.evaluator == evaluator, v.c.level == level)
    return ~reviewed.where(v.c.span_id == func.coalesce(span, EMPTY), v.c.superseded_at.is_(None)).exists()


def rows_query(spec: RuleSpec, since: float, limit: int, cols: Columns) -> QueueQuery | None:
    """The unreviewed `results` rows `spec` selects since `since`, newest first; None when the database cannot
    answer it (a signature rule before schema version 4)."""
    if spec.new_since is not None and not cols.signatures:
        return None
    return QueueQuery(*_rows(_shape(spec), cols), _params(spec, since, limit))


@lru_cache(maxsize=256)
def _rows(shape: _Shape, cols: Columns) -> tuple[Statement, Statement]:
    where = [R.c.created_at >= bindparam("since"), R.c.passed == ZERO if shape.failing else R.c.passed.is_not(None)]
    if shape.evaluators:
        where.append(R.c.evaluator.in_(bindparam("evaluators", expanding=True)))
    if shape.sampled:
        where.append(_tail(R.c.trace_id) < bindparam("share"))
    if shape.near:
        where.append(_near(shape, R.c.evaluator, R.c.score))
    if shape.new:
        s, f = signatures.alias("s"), results.alias("f")
        newest = select(s.c.id).where(s.c.first_seen >= bindparam("new_since"))
        where.append(R.c.signature.in_(newest.order_by(s.c.first_seen.desc()).limit(MAX_NEW_SIGNATURES)))
        firsts = select(f.c.id).where(f.c.signature == R.c.signature).order_by(f.c.created_at, f.c.id)
        where.append(R.c.id.in_(firsts.limit(bindparam("first"))))
    where.append(_unreviewed(R.c.trace_id, R.c.evaluator, R.c.level, R.c.span_id))
    c = R.c
    return _statements(
        select(c.created_at, c.trace_id, c.evaluator, c.level, func.coalesce(c.span_id, EMPTY), c.passed, c.score)
        .add_columns(c.explanation, c.service, cols.signature)
        .select_from(R)
        .where(*where)
        .order_by(c.created_at.desc(), c.id.desc())
        .limit(bindparam("limit"))
    )


def packed_query(spec: RuleSpec, since: float, limit: int, cols: Columns) -> QueueQuery | None:
    """The unreviewed passing results packed in `traces.passed` that `spec` selects since `since`, newest
    first; None when the rule takes no passing results or the database has none packed."""
    if not spec.takes_passing or "passed" not in cols.present:
        return None
    return QueueQuery(*_packed(_shape(spec), cols), _params(spec, since, limit))


@lru_cache(maxsize=256)
def _packed(shape: _Shape, cols: Columns) -> tuple[Statement, Statement]:
    j = packed(cols)
    evaluator, level, span = json_item(j.c.value, 0), json_item(j.c.value, 1), json_item(j.c.value, 2)
    score = json_number(j.c.value, 5)
    where = [T.c.passed.is_not(None), T.c.created_at >= bindparam("since")]
    if shape.evaluators:
        where.append(evaluator.in_(bindparam("evaluators", expanding=True)))
    if shape.sampled:
        where.append(_tail(T.c.trace_id) < bindparam("share"))
    if shape.near:
        where.append(_near(shape, evaluator, score))
    where.append(_unreviewed(T.c.trace_id, evaluator, level, span))
    row_key = trace_row_key("t")
    return _statements(
        select(T.c.created_at, T.c.trace_id, evaluator, level, func.coalesce(span, EMPTY), ONE, score)
        .add_columns(json_item(j.c.value, 6), T.c.service, null())
        .select_from(T, j)
        .where(*where)
        .order_by(newest_traces_first(T.c.created_at, row_key, j.c.key))
        .limit(bindparam("limit"))
    )


_REVIEWED = select(ONE).where(reviews.c.evaluator == bindparam("evaluator"), reviews.c.superseded_at.is_(None))
_REVIEWED_COUNT = Statement(
    select(func.count()).select_from(
        _REVIEWED.where(reviews.c.created_at >= bindparam("since"), reviews.c.verdict_passed.is_not(None))
        .limit(bindparam("cap"))
        .subquery("c")
    )
)


def reviewed_query(evaluator: str, since: float, cap: int) -> tuple[Statement, dict[str, Any]]:
    """(statement, params) of the number of reviews in force of `evaluator`'s verdicts (not of skips) made since
    `since`, counted up to `cap` (the index of the reviews in force by evaluator and time answers it)."""
    return _REVIEWED_COUNT, {"evaluator": evaluator, "since": since, "cap": cap}


_REVIEWS_SINCE = Statement(
    select(func.sum(case((reviews.c.reviewer == bindparam("reviewer"), ONE), else_=ZERO)), func.count()).where(
        reviews.c.created_at >= bindparam("since")
    )
)


def reviews_since_query(since: float, reviewer: str | None) -> tuple[Statement, dict[str, Any]]:
    """(statement, params) of one row (reviews written since `since` by `reviewer`, by anyone)."""
    return _REVIEWS_SINCE, {"reviewer": reviewer or "", "since": since}


def candidate(row: Sequence[Any]) -> Candidate:
    at, trace_id, evaluator, level, span_id, passed, score, explanation, service, signature = row
    return Candidate(
        float(at),
        str(trace_id),
        str(evaluator),
        str(level),
        str(span_id or ""),
        None if passed is None else bool(int(passed)),
        None if score is None else float(score),
        None if explanation is None else str(explanation),
        service,
        signature,
    )
