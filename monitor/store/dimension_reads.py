"""Explanations' reads of the store (monitor/explain): the traces of one time range with their dimension codes and,
computed in SQL, whether each has a failing and a passing verdict of one evaluator and whether it is of a filter
(service, agent, variant); the texts naming the codes of a few of them; and the traces of one failure signature.

One statement reads a range (`trace_signals`, by its time index, newest first, at most `limit`), its parameters
choosing the rows: `restrict` 1 keeps only the filter's rows (0: every row, `matches` telling them apart),
`marker` (`|name|`, NULL: none) the evaluator whose verdicts are read, `with_verdict` 1 keeps only the rows with a
verdict of it (of any evaluator without a marker). The texts are not read with the codes: only the rows naming a
reported factor are looked up, by trace id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Integer, Text, bindparam, case, cast, literal_column, or_, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement, func

from monitor.store.statements import Statement, execute
from monitor.store.tables import results, trace_signals

__all__ = ["DimensionRead", "Holds", "dimension_rows", "dimension_texts", "signature_trace_ids"]

S = trace_signals
ONE: Any = literal_column("1")


class Holds(FunctionElement[int]):
    """1 when a text holds a marker, else 0 (a NULL text or marker: 0): SQLite's `instr`, PostgreSQL's
    `strpos` (both exact and case-sensitive, unlike LIKE)."""

    type = Integer()
    inherit_cache = True


@compiles(Holds, "sqlite")
def _sqlite_holds(element: Holds, compiler: SQLCompiler, **kw: Any) -> str:
    text, marker = element.clauses.clauses
    return compiler.process(func.coalesce(func.instr(text, marker) > 0, 0), **kw)


@compiles(Holds, "postgresql")
def _postgresql_holds(element: Holds, compiler: SQLCompiler, **kw: Any) -> str:
    text, marker = element.clauses.clauses
    return compiler.process(cast(func.coalesce(func.strpos(text, marker) > 0, False), Integer), **kw)


class DimensionRead(NamedTuple):
    """The rows of one range as columns, newest first; `truncated`: the range held more than the limit."""

    trace_ids: list[str]
    blobs: list[bytes | None]
    failed: list[int]  # 1: a failing verdict of the marker's evaluator
    passed: list[int]  # 1: a passing one
    matches: list[int]  # 1: of the filter
    truncated: bool


def _param(name: str) -> Any:
    return cast(bindparam(name), Text)  # typed: PostgreSQL cannot infer the type of `$n IS NULL`


def _matching() -> Any:
    return case(
        (
            (_param("service").is_(None) | (S.c.service == _param("service")))
            & (_param("agent").is_(None) | (S.c.agent == _param("agent")))
            & (_param("variant").is_(None) | (S.c.variant == _param("variant"))),
            ONE,
        ),
        else_=literal_column("0"),
    )


_marker = _param("marker")
_failed, _passed = Holds(S.c.failed_evaluators, _marker), Holds(S.c.passed_evaluators, _marker)
_any_verdict = or_(S.c.failed_evaluators.is_not(None), S.c.passed_evaluators.is_not(None))
_ROWS = Statement(
    select(S.c.trace_id, S.c.dimensions, _failed, _passed, _matching())
    .where(S.c.created_at >= bindparam("since"), S.c.created_at < bindparam("until"))
    .where(or_(bindparam("restrict", type_=Integer) == 0, _matching() == ONE))
    .where(
        or_(
            bindparam("with_verdict", type_=Integer) == 0,
            case((_marker.is_(None), _any_verdict), else_=or_(_failed == ONE, _passed == ONE)),
        )
    )
    .order_by(S.c.created_at.desc())
    .limit(bindparam("limit"))
)
_TEXTS = Statement(select(S.c.trace_id, S.c.dimension_text).where(S.c.trace_id.in_(bindparam("ids", expanding=True))))
_SIGNATURE = Statement(
    select(results.c.trace_id).distinct().where(
        results.c.signature == bindparam("signature"),
        results.c.created_at >= bindparam("since"),
        results.c.created_at < bindparam("until"),
        results.c.passed == literal_column("0"),
    )
    .limit(bindparam("limit"))
)  # fmt: skip


def dimension_rows(db: Any, since: float, until: float, params: dict[str, Any], limit: int) -> DimensionRead:
    """The traces stored at `since` <= time < `until` as `params` choose them (module docstring: `service`,
    `agent`, `variant`, `restrict`, `marker`, `with_verdict`), at most `limit`, newest first."""
    bound: dict[str, Any] = {"service": None, "agent": None, "variant": None, "restrict": 1, "marker": None,
                             "with_verdict": 0}  # fmt: skip
    bound.update(params, since=since, until=until, limit=limit + 1)
    found = execute(db, _ROWS, bound).fetchall()
    truncated = len(found) > limit
    if truncated:
        del found[limit:]
    ids, blobs, failed, passed, matches = (list(c) for c in zip(*found, strict=True)) if found else ([],) * 5
    blobs = [bytes(b) if isinstance(b, memoryview) else b for b in blobs]
    return DimensionRead(ids, blobs, failed, passed, matches, truncated)


def dimension_texts(db: Any, trace_ids: Sequence[str]) -> dict[str, str | None]:
    """The packed dimension texts of `trace_ids` (those stored)."""
    if not trace_ids:
        return {}
    return {trace_id: text for trace_id, text in execute(db, _TEXTS, {"ids": list(trace_ids)})}


def signature_trace_ids(db: Any, signature: str, since: float, until: float, limit: int) -> set[str]:
    """The traces with a failing result of `signature` evaluated at `since` <= time < `until` (at most `limit`)."""
    params = {"signature": signature, "since": since, "until": until, "limit": limit}
    return {row[0] for row in execute(db, _SIGNATURE, params)}
