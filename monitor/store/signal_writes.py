"""Drift detection's rows of an evaluated trace (tables.trace_signals, tables.trace_tools), packed with its trace
row (packing.py: the same `created_at`) and written in the same transaction (row_writes.py).

A trace's figures: its agent (the first of its detail's agents, else its first call's, else ""), LLM calls, tool
calls and the failed ones, its answer's length (NULL: no answer), its tokens (input + output of the calls that
reported usage: the sum of their TOKEN_KINDS parts; NULL when none did), its cost (the sum of its priced calls';
NULL when none was priced) and its duration; one `trace_tools` row per distinct tool it called. Written for every
evaluated trace, with `results: failing` too (the windows need every trace, not only the failing ones).

A trace stored again replaces its rows, as its trace row is replaced (sqlite.py, postgres/store.py): it is counted
once, at the time of its trace row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ARRAY, bindparam, case, cast, func, insert, literal_column, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import Text

from monitor.outcomes import ResultRow, TraceOutcome
from monitor.store.dimension_codes import packed, verdict_name
from monitor.store.statements import SQLITE, RowStatement, Statement, dialect_of, execute, executemany_rows
from monitor.store.storable import storable
from monitor.store.tables import trace_signals, trace_tools

__all__ = [
    "APPEND_VERDICTS",
    "SIGNAL_ROW",
    "TOOL_ROW",
    "signal_rows",
    "verdict_lists",
    "write_signals",
]

SIGNAL_ROW = (
    "trace_id", "created_at", "service", "agent", "variant", "has_error", "llm_calls", "tool_calls", "tool_failures",
    "response_chars", "tokens", "cost_usd", "duration_ms", "dimensions", "dimension_text", "failed_evaluators",
    "passed_evaluators",
)  # fmt: skip
TOOL_ROW = ("trace_id", "tool", "created_at", "service", "agent")


def _replacing(table: Any, layout: tuple[str, ...]) -> RowStatement:
    """SQLite: the insert of a `table` row in `layout` that replaces the row of the same key."""
    values: dict[str, Any] = {name: bindparam(name) for name in layout}
    return RowStatement(insert(table).prefix_with("OR REPLACE", dialect="sqlite").values(values), layout)


def _appended(listed: Any, added: Any) -> Any:
    """`listed` with `added` after it (`|a|` + `|b|` → `|a|b|`); NULL `added` leaves it, NULL `listed` takes it."""
    joined = listed.concat(func.substr(added, literal_column("2")))
    return case((added.is_(None), listed), (listed.is_(None), added), else_=joined)


def _unnested(table: Any, layout: tuple[str, ...], key: tuple[str, ...]) -> Statement:
    """PostgreSQL: the insert of a batch of `table` rows given as one array per column of `layout` (one statement
    per batch, not one per row: the trace rows' executemany already costs the writer a round of the pipeline per
    row), replacing the rows of the same `key` (a key once per batch: `_last_of`)."""
    arrays = [cast(bindparam(name), ARRAY(table.c[name].type)) for name in layout]
    rows = func.unnest(*arrays).table_valued(*layout).render_derived(name="u")
    upsert = postgresql.insert(table).from_select(list(layout), select(*(rows.c[name] for name in layout)))
    return Statement(
        upsert.on_conflict_do_update(
            index_elements=[table.c[name] for name in key],
            set_={name: upsert.excluded[name] for name in layout if name not in key},
        )
    )


INSERT_SIGNALS = _replacing(trace_signals, SIGNAL_ROW)
INSERT_TOOLS = _replacing(trace_tools, TOOL_ROW)
# A late verdict (an LLM judge's) appended to its trace's lists; both texts are `|name|` or NULL (nothing added).
APPEND_VERDICTS = RowStatement(
    update(trace_signals)
    .values(
        failed_evaluators=_appended(trace_signals.c.failed_evaluators, cast(bindparam("failed"), Text)),
        passed_evaluators=_appended(trace_signals.c.passed_evaluators, cast(bindparam("passed"), Text)),
    )
    .where(trace_signals.c.trace_id == bindparam("of_trace")),
    ("failed", "passed", "of_trace"),
)
UNNEST_SIGNALS = _unnested(trace_signals, SIGNAL_ROW, ("trace_id",))
UNNEST_TOOLS = _unnested(trace_tools, TOOL_ROW, ("trace_id", "tool"))


def _agent(o: TraceOutcome) -> str:
    if o.detail is not None and o.detail.agents:
        return o.detail.agents[0]
    return next((call.agent for call in o.calls if call.agent), "")


def signal_rows(o: TraceOutcome, now: float, trace_id: str, service: str, variant: str) -> tuple[tuple, list[tuple]]:
    """`o`'s `trace_signals` row and its `trace_tools` rows, stored at `now` (`trace_id`, `service`, `variant`:
    as its trace row has them, storable)."""
    agent = storable(_agent(o))
    tokens: int | None = None
    cost: float | None = None
    for call in o.calls:
        if call.tokens is not None:
            tokens = (tokens or 0) + sum(call.tokens)
        if call.cost_usd is not None and math.isfinite(call.cost_usd):
            cost = (cost or 0.0) + call.cost_usd
    failures = sum(1 for _, ok in o.tools if not ok)
    duration = o.duration_ms if math.isfinite(o.duration_ms) else None
    chars = None if o.output is None else len(o.output)
    codes, text = packed(o.dimensions) if o.dimensions else (None, None)
    failed, passed = verdict_lists(o.results)
    row = (trace_id, now, service, agent, variant, int(o.has_error), len(o.calls), len(o.tools), failures, chars,
           tokens, cost, duration, codes, storable(text) if text else None, failed, passed)  # fmt: skip
    if not o.tools:
        return row, []
    return row, [(trace_id, storable(tool), now, service, agent) for tool in dict.fromkeys(t for t, _ in o.tools)]


def verdict_lists(rows: Iterable[ResultRow]) -> tuple[str | None, str | None]:
    """(failed, passed) of a trace's results: the evaluators with a failing verdict, those with verdicts and none
    failing, each as `|name|name|` (None: none). A skip is no verdict."""
    failed: dict[str, None] = {}
    passed: dict[str, None] = {}
    for r in rows:
        if r.passed is False:
            failed[r.evaluator] = None
        elif r.passed:
            passed[r.evaluator] = None
    return _listed(failed), _listed(k for k in passed if k not in failed)


def _listed(names: Iterable[str]) -> str | None:
    text = "|".join(storable(verdict_name(n)) for n in names)
    return f"|{text}|" if text else None


def write_signals(db: Any, signals: Sequence[tuple], tools: Sequence[tuple]) -> None:
    """Insert (replacing) the rows `signal_rows` made, in the caller's transaction: SQLite's a row per statement
    (executemany costs it nothing more), PostgreSQL's a statement per table."""
    if dialect_of(db) == SQLITE:
        for statement, rows in ((INSERT_SIGNALS, signals), (INSERT_TOOLS, tools)):
            if rows:
                executemany_rows(db, statement, rows)
        return
    for unnest, layout, rows, width in ((UNNEST_SIGNALS, SIGNAL_ROW, signals, 1), (UNNEST_TOOLS, TOOL_ROW, tools, 2)):
        if rows:
            columns = zip(*_last_of(rows, width), strict=True)
            execute(db, unnest, {name: list(values) for name, values in zip(layout, columns, strict=True)})


def _last_of(rows: Sequence[tuple], width: int) -> Sequence[tuple]:
    """`rows` with one row per key (their first `width` values): the last (PostgreSQL refuses to update a row twice
    in one statement; a trace evaluated twice in one batch keeps its last row, as executemany would)."""
    if len(rows) == 1:
        return rows
    return list({row[:width]: row for row in rows}.values())
