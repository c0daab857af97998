"""The SQL of the review queue (queue.py), on both databases (sql.Columns gives the dialect).

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
from typing import Any, NamedTuple

from monitor.review.sql import Columns, Conditions

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


def _tail(column: str) -> str:
    return f"lower(substr({column}, length({column}) - {HEX_TAIL - 1}))"


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def _unreviewed(trace: str, evaluator: str, level: str, span: str) -> str:
    return (
        f"NOT EXISTS (SELECT 1 FROM reviews v WHERE v.trace_id = {trace} AND v.evaluator = {evaluator}"
        f" AND v.level = {level} AND v.span_id = COALESCE({span}, '') AND v.superseded_at IS NULL)"
    )


def rows_query(spec: RuleSpec, since: float, limit: int, cols: Columns) -> tuple[str, list[Any]] | None:
    """(sql, params) of the unreviewed `results` rows `spec` selects since `since`, newest first; None when the
    database cannot answer it (a signature rule before schema version 4)."""
    if spec.new_since is not None and not cols.signatures:
        return None
    cond = Conditions("r.created_at >= ?", "r.passed = 0" if spec.failing else "r.passed IS NOT NULL")
    cond.params.append(since)
    if spec.evaluators is not None:
        cond.add(f"r.evaluator IN ({_marks(spec.evaluators)})", *spec.evaluators)
    if spec.share is not None and spec.share < 1.0:
        cond.add(f"{_tail('r.trace_id')} < ?", share_bound(spec.share))
    if spec.near:
        cond.add(
            "(" + " OR ".join("(r.evaluator = ? AND r.score >= ? AND r.score <= ?)" for _ in spec.near) + ")",
            *_near_params(spec),
        )
    if spec.new_since is not None:
        cond.add(
            "r.signature IN (SELECT s.id FROM signatures s WHERE s.first_seen >= ?"
            f" ORDER BY s.first_seen DESC LIMIT {MAX_NEW_SIGNATURES})",
            spec.new_since,
        )
        cond.add(
            "r.id IN (SELECT f.id FROM results f WHERE f.signature = r.signature ORDER BY f.created_at, f.id LIMIT ?)",
            spec.first,
        )
    cond.add(_unreviewed("r.trace_id", "r.evaluator", "r.level", "r.span_id"))
    signature = "r.signature" if cols.signatures else "NULL"
    sql = (
        "SELECT r.created_at, r.trace_id, r.evaluator, r.level, COALESCE(r.span_id, ''), r.passed, r.score,"
        f" r.explanation, r.service, {signature} FROM results r{cond.sql}"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
    )
    return sql, [*cond.params, limit]


def packed_query(spec: RuleSpec, since: float, limit: int, cols: Columns) -> tuple[str, list[Any]] | None:
    """(sql, params) of the unreviewed passing results packed in `traces.passed` that `spec` selects since
    `since`, newest first; None when the rule takes no passing results or the database has none packed."""
    if not spec.takes_passing or "passed" not in cols.present:
        return None
    d = cols.dialect
    evaluator, level, span = d.item("j.value", 0), d.item("j.value", 1), d.item("j.value", 2)
    score = d.number(d.item("j.value", 5))
    cond = Conditions("t.passed IS NOT NULL", "t.created_at >= ?")
    cond.params.append(since)
    if spec.evaluators is not None:
        cond.add(f"{evaluator} IN ({_marks(spec.evaluators)})", *spec.evaluators)
    if spec.share is not None and spec.share < 1.0:
        cond.add(f"{_tail('t.trace_id')} < ?", share_bound(spec.share))
    if spec.near:
        cond.add(
            "(" + " OR ".join(f"({evaluator} = ? AND {score} >= ? AND {score} <= ?)" for _ in spec.near) + ")",
            *_near_params(spec),
        )
    cond.add(_unreviewed("t.trace_id", evaluator, level, span))
    sql = (
        f"SELECT t.created_at, t.trace_id, {evaluator}, {level}, COALESCE({span}, ''), 1, {score},"
        f" {d.item('j.value', 6)}, t.service, NULL FROM traces t, {d.each_passed('t.passed')}{cond.sql}"
        f" ORDER BY t.created_at DESC, t.{d.rowid} DESC{d.passed_order} LIMIT ?"
    )
    return sql, [*cond.params, limit]


def _near_params(spec: RuleSpec) -> list[Any]:
    params: list[Any] = []
    for name, low, high in spec.near:
        params += [name, low - _EPSILON, high + _EPSILON]
    return params


def reviewed_query(evaluator: str, since: float, cap: int) -> tuple[str, list[Any]]:
    """(sql, params) of the number of reviews in force of `evaluator`'s verdicts (not of skips) made since `since`,
    counted up to `cap` (the index of the reviews in force by evaluator and time answers it)."""
    return (
        "SELECT COUNT(*) FROM (SELECT 1 FROM reviews WHERE evaluator = ? AND superseded_at IS NULL"
        " AND created_at >= ? AND verdict_passed IS NOT NULL LIMIT ?) c",
        [evaluator, since, cap],
    )


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


def count_sql(query: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    """The number of rows `query` gives (its LIMIT bounds the count)."""
    sql, params = query
    return f"SELECT COUNT(*) FROM ({sql}) c", params
