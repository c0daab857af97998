"""Reviewers' verdicts on results, in the result store (`reviews`, schema version 7: see schema.REVIEW_TABLES).

A review names one result by its key (trace id, evaluator, level, span id: "" when the result names none): a
failing result or a skip kept as a `results` row, or a passing one kept in its trace's `passed` list. The reviewer
agrees or disagrees with the evaluator's verdict (a failing result disagreed with is a false alarm, a passing one a
miss), may give a corrected score or label and a note, and is named. `write_review` records the verdict as the
reviewer saw it and a snapshot of the trace (`task`: what a dataset task needs, so the review outlives the trace's
retention). A review changed later is a new row; the earlier one is kept with the time it was superseded (the
audit trail), in the same transaction, so exactly one review of a result is in force.

Every function takes a connection of either database (sqlite3's, or the PostgreSQL store's `Connection`: the
statements are statements.py's) and runs in the caller's transaction (`QueuedResultStore.transaction`).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from sqlalchemy import Select, bindparam, func, insert, literal_column, select, update

from monitor.outcomes import MAX_TEXT
from monitor.store.packing import PASSED_FIELDS
from monitor.store.schema import Database
from monitor.store.statements import RowStatement, Statement, execute, execute_row
from monitor.store.storable import storable, storable_json
from monitor.store.tables import results, reviews, traces

Agreement = Literal["agree", "disagree"]
AGREEMENTS: tuple[Agreement, ...] = ("agree", "disagree")
MAX_NOTE = 2000  # characters kept of a note
MAX_LABEL = 200  # characters kept of a corrected label and of a reviewer's name
REVIEW_COLUMNS = (
    "review_id",
    "trace_id",
    "evaluator",
    "level",
    "span_id",
    "session_id",
    "service",
    "verdict_passed",
    "verdict_score",
    "verdict_signature",
    "agreement",
    "corrected_score",
    "corrected_label",
    "note",
    "reviewer",
    "created_at",
    "superseded_at",
    "task",
)
_r = reviews.c
_SELECT = select(*(_r[name] for name in REVIEW_COLUMNS))
_KEY = tuple(_r[name] == bindparam(name) for name in ("trace_id", "evaluator", "level", "span_id"))
_IN_FORCE = _r.superseded_at.is_(None)
_THE_RESULT = (results.c.trace_id == bindparam("trace_id"), results.c.evaluator == bindparam("evaluator"),
               results.c.level == bindparam("level"))  # fmt: skip
_VERDICT = Statement(
    select(results.c.passed, results.c.score, results.c.signature, results.c.session_id, results.c.service)
    .where(*_THE_RESULT, func.coalesce(results.c.span_id, literal_column("''")) == bindparam("span_id"))
    .order_by(results.c.created_at.desc())
    .limit(1)
)
_OF_TRACE = traces.c.trace_id == bindparam("trace_id")
_PASSED_OF_TRACE = Statement(select(traces.c.passed, traces.c.service).where(_OF_TRACE))
_RESULT_SPANS = Statement(select(results.c.span_id).distinct().where(*_THE_RESULT))
_REVIEWED_SPANS = Statement(
    select(_r.span_id).distinct().where(*(_r[name] == bindparam(name) for name in ("trace_id", "evaluator", "level")))
)
_TASK = Statement(
    select(*(traces.c[name] for name in ("input", "output", "duration_ms", "service", "agents", "tools", "detail")))
    .where(_OF_TRACE)
)  # fmt: skip
_SUPERSEDE = Statement(update(reviews).values(superseded_at=bindparam("now")).where(*_KEY, _IN_FORCE))
_INSERT = RowStatement(insert(reviews).values({name: bindparam(name) for name in REVIEW_COLUMNS}), REVIEW_COLUMNS)
_OF_TRACE_IN_FORCE = Statement(_SELECT.where(_r.trace_id == bindparam("trace_id"), _IN_FORCE).order_by(_r.created_at))
_OF_TRACES_IN_FORCE = Statement(_SELECT.where(_r.trace_id.in_(bindparam("ids", expanding=True)), _IN_FORCE))
_HISTORY = Statement(_SELECT.where(*_KEY).order_by(_r.created_at.desc()))


class ResultKey(NamedTuple):
    """One result: its trace, evaluator, level and span ("" when it names none)."""

    trace_id: str
    evaluator: str
    level: str
    span_id: str = ""


class ReviewInput(NamedTuple):
    """A reviewer's verdict on one result, as the API and the page take it."""

    key: ResultKey
    agreement: Agreement
    reviewer: str
    corrected_score: float | None = None
    corrected_label: str | None = None
    note: str | None = None


class EvaluatorVerdict(NamedTuple):
    """The evaluator's verdict on a result, as stored: passed (True, False, None for a skip), score, signature."""

    passed: bool | None
    score: float | None
    signature: str | None
    session_id: str | None
    service: str | None


class StoredReview(NamedTuple):
    """A row of `reviews` (REVIEW_COLUMNS); `task` parsed (None when the trace was not stored)."""

    review_id: str
    trace_id: str
    evaluator: str
    level: str
    span_id: str
    session_id: str | None
    service: str | None
    verdict_passed: bool | None
    verdict_score: float | None
    verdict_signature: str | None
    agreement: Agreement
    corrected_score: float | None
    corrected_label: str | None
    note: str | None
    reviewer: str
    created_at: float
    superseded_at: float | None
    task: dict[str, Any] | None

    @property
    def key(self) -> ResultKey:
        return ResultKey(self.trace_id, self.evaluator, self.level, self.span_id)

    @property
    def false_alarm(self) -> bool:
        """The evaluator failed it and the reviewer disagrees."""
        return self.verdict_passed is False and self.agreement == "disagree"

    @property
    def miss(self) -> bool:
        """The evaluator passed it and the reviewer disagrees."""
        return self.verdict_passed is True and self.agreement == "disagree"


class ResultNotFound(LookupError):
    """No stored result has this key (never stored, pruned, or a `sampled_out` skip)."""


def verdict_of(db: Database, key: ResultKey) -> EvaluatorVerdict:
    """The stored verdict on `key`: its `results` row, else its entry in the trace's `passed` list."""
    row = execute(db, _VERDICT, key._asdict()).fetchone()
    if row is not None:
        passed, score, signature, session_id, service = row
        return EvaluatorVerdict(None if passed is None else bool(passed), score, signature, session_id, service)
    row = execute(db, _PASSED_OF_TRACE, {"trace_id": key.trace_id}).fetchone()
    if row is not None and row[0]:
        for values in json.loads(row[0]):
            entry = dict(zip(PASSED_FIELDS, values, strict=False))
            if (entry["evaluator"], entry["level"], entry["span_id"] or "") == tuple(key)[1:]:
                return EvaluatorVerdict(True, entry["score"], None, None, row[1])
    raise ResultNotFound(f"no stored result of {key.evaluator} ({key.level}) on trace {key.trace_id}")


def resolved_key(db: Database, key: ResultKey) -> ResultKey:
    """`key` as the store names its result: a key without a span id whose evaluator has exactly one result of that
    level on the trace (a trace-level result carries the root span's id) names that result's span; any other key is
    kept as it is (an exact match, or several spans: the caller must name one)."""
    if key.span_id:
        return key
    spans = _spans_of(db, key)
    return key._replace(span_id=spans.pop()) if len(spans) == 1 and "" not in spans else key


def _spans_of(db: Database, key: ResultKey) -> set[str]:
    """The span ids of the stored results of `key`'s trace, evaluator and level (results rows, the passed list,
    and the reviews, which outlive both)."""
    trace_id, evaluator, level = key.trace_id, key.evaluator, key.level
    the_result = {"trace_id": trace_id, "evaluator": evaluator, "level": level}
    spans = {r[0] or "" for r in execute(db, _RESULT_SPANS, the_result).fetchall()}
    row = execute(db, _PASSED_OF_TRACE, {"trace_id": trace_id}).fetchone()
    if row is not None and row[0]:
        for values in json.loads(row[0]):
            entry = dict(zip(PASSED_FIELDS, values, strict=False))
            if (entry["evaluator"], entry["level"]) == (evaluator, level):
                spans.add(entry["span_id"] or "")
    if not spans:
        spans = {r[0] or "" for r in execute(db, _REVIEWED_SPANS, the_result).fetchall()}
    return spans


def task_snapshot(db: Database, trace_id: str) -> dict[str, Any] | None:
    """What a dataset task needs of a stored trace: input, output, the tools in call order, duration, cost, models,
    agents and service; None when the trace is not stored."""
    row = execute(db, _TASK, {"trace_id": trace_id}).fetchone()
    if row is None:
        return None
    text_in, text_out, duration_ms, service, agents, tools, detail = row
    parsed = json.loads(detail) if detail else {}
    steps = parsed.get("steps") or []
    trajectory = [step[4] for step in steps if len(step) > 4 and step[3] == "tool"]
    cost = (parsed.get("cost") or [None])[0]
    return {
        "input": text_in,
        "output": text_out,
        "trajectory": trajectory if trajectory or not tools else json.loads(tools),
        "duration_ms": duration_ms,
        "cost_usd": cost,
        "models": [m[0] for m in (parsed.get("models") or []) if m],
        "agents": json.loads(agents) if agents else [],
        "service": service,
    }


def write_review(db: Database, review: ReviewInput, now: float) -> StoredReview:
    """Record `review` (in force from `now`; the review it replaces kept as superseded). ResultNotFound when the
    store has no such result. Its texts are made storable as a result's are (a NUL character or a lone surrogate
    becomes U+FFFD), and a key without a span id names the result's span when there is one result (resolved_key)."""
    key = resolved_key(db, ResultKey(*(storable(part) for part in review.key)))
    verdict = verdict_of(db, key)
    execute(db, _SUPERSEDE, {"now": now, **key._asdict()})
    stored = StoredReview(
        uuid.uuid4().hex,
        *key,
        verdict.session_id,
        verdict.service,
        verdict.passed,
        verdict.score,
        verdict.signature,
        review.agreement,
        review.corrected_score,
        _cut(review.corrected_label, MAX_TEXT),
        _cut(review.note, MAX_NOTE),
        _cut(review.reviewer, MAX_LABEL) or "",
        now,
        None,
        task_snapshot(db, key.trace_id),
    )
    execute_row(db, _INSERT, _row(stored))
    return stored


def reviews_of_trace(db: Database, trace_id: str) -> list[StoredReview]:
    """The reviews in force of a trace's results."""
    return [_stored(r) for r in execute(db, _OF_TRACE_IN_FORCE, {"trace_id": trace_id}).fetchall()]


def reviews_of_traces(db: Database, trace_ids: Sequence[str]) -> list[StoredReview]:
    """The reviews in force of these traces' results (a page of results: at most a few hundred traces)."""
    if not trace_ids:
        return []
    return [_stored(r) for r in execute(db, _OF_TRACES_IN_FORCE, {"ids": list(trace_ids)}).fetchall()]


def history(db: Database, key: ResultKey) -> list[StoredReview]:
    """Every review of one result, newest first (the one in force first)."""
    key = resolved_key(db, ResultKey(*(storable(part) for part in key)))
    return [_stored(r) for r in execute(db, _HISTORY, key._asdict()).fetchall()]


def reviews_in_force(
    db: Database, evaluator: str | None = None, since: float | None = None, limit: int = 100_000
) -> list[StoredReview]:
    """The reviews in force (of `evaluator`, made since `since`), oldest first."""
    params = _given({"evaluator": evaluator, "since": since}, limit)
    statement = _filtered(tuple(params), newest_first=False)
    return [_stored(r) for r in execute(db, statement, params).fetchall()]


def find_reviews(
    db: Database,
    limit: int,
    *,
    evaluator: str | None = None,
    trace_id: str | None = None,
    reviewer: str | None = None,
    agreement: str | None = None,
    since: float | None = None,
) -> list[StoredReview]:
    """The reviews in force matching every filter given (`since`: made at or after), newest first, at most
    `limit`."""
    filters = {"evaluator": evaluator, "trace_id": trace_id, "reviewer": reviewer, "agreement": agreement}
    params = _given({**filters, "since": since}, limit)
    statement = _filtered(tuple(params), newest_first=True)
    return [_stored(r) for r in execute(db, statement, params).fetchall()]


def _given(filters: dict[str, Any], limit: int) -> dict[str, Any]:
    """The filters given (not None), and the limit."""
    return {**{name: value for name, value in filters.items() if value is not None}, "limit": limit}


@functools.cache
def _filtered(names: tuple[str, ...], newest_first: bool) -> Statement:
    """The reviews in force matching the filters `names` (a column each, equal to the parameter of its name;
    `since`: made at or after), oldest or newest first, at most `:limit` (one statement per set of filters)."""
    order = (_r.created_at.desc(), _r.review_id) if newest_first else (_r.created_at,)
    conditions = [_r.created_at >= bindparam(name) if name == "since" else _r[name] == bindparam(name)
                  for name in names if name != "limit"]  # fmt: skip
    query: Select[Any] = _SELECT.where(_IN_FORCE, *conditions).order_by(*order).limit(bindparam("limit"))
    return Statement(query)


def _cut(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    text = storable(text).strip()
    return text[:limit] if text else None


def _row(review: StoredReview) -> tuple:
    values = list(review)
    values[7] = None if review.verdict_passed is None else int(review.verdict_passed)
    values[-1] = None if review.task is None else storable_json(json.dumps(review.task, ensure_ascii=False))
    return tuple(values)


def _stored(row: Sequence[Any]) -> StoredReview:
    values = list(row)
    values[7] = None if values[7] is None else bool(values[7])
    values[-1] = json.loads(values[-1]) if values[-1] else None
    return StoredReview(*values)
