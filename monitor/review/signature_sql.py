"""The SQL of the review's failure signatures (signature_reader.py), on both databases: Core statements built
once per shape of the filter (which of its fields are set), its values bound by name.

Counts come from the failing `results` rows by their signature (index `results_signature(signature,
created_at)` for one signature; the time index for a range); the signature's own facts (template, first/last
seen, where seen) from the `signatures` table. Agent and variant filters join the result's trace, as the results
list does (`sql.py`). Cursors are base64 JSON: [since, until, offset] for the list (a page of an absolute range,
so a relative `since` does not shift the pages), [since, until, time, trace id] for a signature's traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Double, Select, and_, bindparam, func, or_, select

from monitor.review.signature_models import SignatureFilter
from monitor.review.sql import FIRST, SECOND, ZERO, Columns, R, T
from monitor.store.sql_functions import whole_part
from monitor.store.statements import Statement
from monitor.store.tables import signatures

MAX_GROUPS = 5000  # signatures ranked per range (the busiest first)
MAX_CURSOR_CHARS = 256
SIGNATURE_FIELDS = (
    "id", "version", "evaluator", "level", "agent", "step_kind", "step_name", "error_type", "template", "example",
    "first_seen", "last_seen", "count", "services", "agents", "models", "variants", "versions", "example_traces",
    "regressed_at",
)  # fmt: skip
FIELDS = ("evaluator", "service", "agent", "variant")  # of the filter, those that may be unset


def _shape(where: SignatureFilter) -> tuple[frozenset[str], bool]:
    return frozenset(name for name in FIELDS if getattr(where, name) is not None), where.variant == ""


def _params(where: SignatureFilter, since: float, until: float, **more: Any) -> dict[str, Any]:
    values = {name: getattr(where, name) for name in FIELDS if getattr(where, name) is not None}
    return {**values, "since": since, "until": until, **more}


def _filtered(columns: Sequence[ColumnElement[Any]], fields: frozenset[str], empty: bool, cols: Columns) -> Select:
    """The failing results with a signature matching the filter's `fields` in [since, until)."""
    where: list[ColumnElement[bool]] = [R.c.signature.is_not(None)]
    if "evaluator" in fields:
        where.append(R.c.evaluator == bindparam("evaluator"))
    if "service" in fields:
        where.append(R.c.service == bindparam("service"))
    if "agent" in fields:
        where.append(cols.agent(R.c.agent) == bindparam("agent"))
    if "variant" in fields:
        where.append(cols.variant_is(empty, indexed=False))
    where += [R.c.created_at >= bindparam("since"), R.c.created_at < bindparam("until")]
    joined = "agent" in fields or "variant" in fields
    source = R.outerjoin(T, T.c.trace_id == R.c.trace_id) if joined else R
    return select(*columns).select_from(source).where(*where)


def counts_query(where: SignatureFilter, cols: Columns, since: float, until: float, one: str | None = None) -> tuple:
    """(statement, params) of rows (signature, results, traces) in [since, until), the busiest first (`one`: only
    it)."""
    params = _params(where, since, until, groups=MAX_GROUPS, **({} if one is None else {"one": one}))
    return _counts(*_shape(where), cols, one is not None), params


@lru_cache(maxsize=128)
def _counts(fields: frozenset[str], empty: bool, cols: Columns, one: bool) -> Statement:
    query = _filtered((R.c.signature, func.count(), func.count(R.c.trace_id.distinct())), fields, empty, cols)
    if one:
        query = query.where(R.c.signature == bindparam("one"))
    return Statement(query.group_by(R.c.signature).order_by(SECOND.desc(), FIRST).limit(bindparam("groups")))


def trend_query(where: SignatureFilter, cols: Columns, ids: Sequence[str], step: float) -> tuple:
    """(statement, params) of rows (signature, bucket index, results) of `ids` over the range of `where`."""
    return _trend(*_shape(where), cols), _params(where, where.since, where.until, ids=list(ids), step=step)


@lru_cache(maxsize=128)
def _trend(fields: frozenset[str], empty: bool, cols: Columns) -> Statement:
    since: ColumnElement[float] = bindparam("since", type_=Double())
    step: ColumnElement[float] = bindparam("step", type_=Double())
    bucket = whole_part((R.c.created_at - since) / step)
    query = _filtered((R.c.signature, bucket, func.count()), fields, empty, cols)
    return Statement(query.where(R.c.signature.in_(bindparam("ids", expanding=True))).group_by(FIRST, SECOND))


_ROWS = Statement(
    select(*(signatures.c[name] for name in SIGNATURE_FIELDS)).where(
        signatures.c.id.in_(bindparam("ids", expanding=True))
    )
)


def rows_query(ids: Sequence[str]) -> tuple:
    return _ROWS, {"ids": list(ids)}


_NEWEST = func.max(R.c.created_at)
_TRACES = (
    select(R.c.trace_id, _NEWEST)
    .where(R.c.signature == bindparam("signature"), R.c.created_at >= bindparam("since"))
    .where(R.c.created_at < bindparam("until"))
    .group_by(R.c.trace_id)
    .order_by(SECOND.desc(), FIRST.desc())
    .limit(bindparam("limit"))
)
_AT: ColumnElement[float] = bindparam("at")
_TRACES_AFTER = _TRACES.having(or_(_NEWEST < _AT, and_(_NEWEST == _AT, R.c.trace_id < bindparam("trace_id"))))
_TRACE_PAGES = {False: Statement(_TRACES), True: Statement(_TRACES_AFTER)}


def traces_query(signature: str, where: SignatureFilter, after: tuple[float, str] | None, limit: int) -> tuple:
    """(statement, params) of rows (trace id, its newest result with the signature) in the range, newest first."""
    params: dict[str, Any] = {"signature": signature, "since": where.since, "until": where.until, "limit": limit}
    if after is not None:
        params.update(at=after[0], trace_id=after[1])
    return _TRACE_PAGES[after is not None], params


_VERDICTS = Statement(
    select(R.c.trace_id, R.c.created_at, R.c.evaluator, R.c.level, R.c.explanation, R.c.score, R.c.signature)
    .add_columns(R.c.agent, R.c.model, R.c.span_id, R.c.service)
    .where(R.c.trace_id.in_(bindparam("ids", expanding=True)), R.c.passed == ZERO)
    .order_by(R.c.id)
)


def verdicts_query(trace_ids: Sequence[str]) -> tuple:
    """(statement, params) of the failing results of the traces, in evaluation order."""
    return _VERDICTS, {"ids": list(trace_ids)}


@lru_cache(maxsize=16)
def _trace_variants(cols: Columns) -> Statement:
    query = select(T.c.trace_id, T.c.service, cols.variant).where(T.c.trace_id.in_(bindparam("ids", expanding=True)))
    return Statement(query)


def trace_variants_query(trace_ids: Sequence[str], cols: Columns) -> tuple:
    return _trace_variants(cols), {"ids": list(trace_ids)}


@lru_cache(maxsize=16)
def _variant_counts(cols: Columns) -> Statement:
    query = (
        select(R.c.signature, cols.variant, func.count())
        .select_from(R.join(T, T.c.trace_id == R.c.trace_id))
        .where(R.c.signature.is_not(None), R.c.created_at >= bindparam("since"), R.c.created_at < bindparam("until"))
        .where(cols.variant.in_(bindparam("variants", expanding=True)))
        .group_by(FIRST, SECOND)
    )
    return Statement(query)


def variant_counts_query(cols: Columns, variants: Sequence[str], since: float, until: float) -> tuple:
    """(statement, params) of rows (signature, variant, results) of the variants' traces in [since, until)."""
    return _variant_counts(cols), {"since": since, "until": until, "variants": list(variants)}


@lru_cache(maxsize=16)
def _variant_traces(cols: Columns) -> Statement:
    query = (
        select(cols.variant, func.count())
        .select_from(T)
        .where(T.c.created_at >= bindparam("since"), T.c.created_at < bindparam("until"))
        .where(cols.variant.in_(bindparam("variants", expanding=True)))
        .group_by(FIRST)
    )
    return Statement(query)


def variant_traces_query(cols: Columns, variants: Sequence[str], since: float, until: float) -> tuple:
    """(statement, params) of rows (variant, stored traces) in [since, until)."""
    return _variant_traces(cols), {"since": since, "until": until, "variants": list(variants)}
