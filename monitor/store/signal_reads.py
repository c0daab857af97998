"""Drift detection's reads of the store (signal_rows.py): every aggregate of one window, and the drift episodes.

`window_aggregates(db, since, until)`: the rows stored at since <= time < until, counted and summed per group in
SQL (counts, sums and sums of squares; nothing per row in Python), on either database:

- traces (`trace_signals`, by its time index) per (service, agent): errors, LLM and tool calls, failed tool calls,
  answer length, tokens, cost, latency (seconds); and per (service, agent, variant);
- the traces calling each tool (`trace_tools`) per (service, agent, tool);
- the verdicts (skips left out) per (service, agent, evaluator): the `results` rows with one (failing results,
  passing session-level ones with `results: all`), by `results_time`, and the passing results packed in their
  trace's `traces.passed` (`results: all`), by `traces_time`; the agent is the result's own, else its trace's
  (`trace_signals.agent`, a LEFT JOIN on the trace id), else "". With `results: failing` no passing result is
  stored: the pass ratios then count only the failures;
- the conversations completed in the window (`sessions`, by `completed_at`) per (service, ended).

`drift_episodes(db)` and `record_drift_episodes(db, started, ended)` (in the caller's transaction): an episode
started is inserted unless one with its key is there (the first writer's `since` wins: every replica agrees), an
ended one deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Double, bindparam, cast, delete, func, insert, literal_column, select
from sqlalchemy.dialects import postgresql

from monitor.store.signal_rows import (
    DriftEpisode,
    ResultAggregate,
    SessionAggregate,
    ToolAggregate,
    TraceAggregate,
    VariantCount,
    WindowAggregates,
)
from monitor.store.sql_functions import json_elements, json_item, json_number
from monitor.store.statements import POSTGRESQL, SQLITE, Statement, dialect_of, execute, executemany
from monitor.store.tables import drift_episodes as episodes
from monitor.store.tables import results, sessions, trace_signals, trace_tools, traces

__all__ = ["drift_episodes", "record_drift_episodes", "window_aggregates"]

EMPTY: ColumnElement[Any] = literal_column("''")  # a literal, not a bound value: the same in SELECT and GROUP BY
S = trace_signals.alias("s")
R = results.alias("r")
T = traces.alias("t")


def _in_window(column: ColumnElement[Any]) -> list[ColumnElement[bool]]:
    return [column >= bindparam("since"), column < bindparam("until")]


def _moments(value: ColumnElement[Any], counted: bool = True) -> list[ColumnElement[Any]]:
    """(count of the non-NULL values,) their sum and their sum of squares, as doubles (no integer overflow, no
    PostgreSQL numeric)."""
    real = cast(value, Double)
    sums: list[ColumnElement[Any]] = [func.sum(real), func.sum(real * real)]
    return [func.count(value), *sums] if counted else sums


def _grouped(keys: list[ColumnElement[Any]], figures: list[ColumnElement[Any]], source: Any, where: list) -> Statement:
    return Statement(select(*keys, *figures).select_from(source).where(*where).group_by(*keys).order_by(*keys))


_TRACES = _grouped(
    [S.c.service, S.c.agent],
    [
        func.count(),
        func.sum(S.c.has_error),
        *_moments(S.c.llm_calls, counted=False),
        *_moments(S.c.tool_calls, counted=False),
        func.sum(cast(S.c.tool_failures, Double)),
        *_moments(S.c.response_chars),
        *_moments(S.c.tokens),
        *_moments(S.c.cost_usd),
        *_moments(S.c.duration_ms / literal_column("1000.0")),  # seconds
    ],
    S,
    _in_window(S.c.created_at),
)
# the integer figures of a TraceAggregate after its keys (the others are sums: floats)
_TRACE_COUNTS = frozenset(TraceAggregate._fields.index(name) for name in TraceAggregate._fields
                          if name in ("traces", "errors") or name.endswith("_n"))  # fmt: skip
_TOOLS = _grouped(
    [trace_tools.c.service, trace_tools.c.agent, trace_tools.c.tool],
    [func.count()],
    trace_tools,
    _in_window(trace_tools.c.created_at),
)
_VARIANTS = _grouped(
    [S.c.service, S.c.agent, S.c.variant], [func.count()], S, _in_window(S.c.created_at)
)  # fmt: skip
_SESSIONS = _grouped(
    [sessions.c.service, sessions.c.ended],
    [func.count(), *_moments(sessions.c.turn_count, counted=False)],
    sessions,
    _in_window(sessions.c.completed_at),
)
# verdicts: per (service, agent, evaluator) the verdicts, those passed, and the scores' moments
_RESULTS = _grouped(
    [func.coalesce(R.c.service, EMPTY), func.coalesce(func.nullif(R.c.agent, EMPTY), S.c.agent, EMPTY), R.c.evaluator],
    [func.count(), func.sum(R.c.passed), *_moments(R.c.score)],
    R.outerjoin(S, S.c.trace_id == R.c.trace_id),
    [*_in_window(R.c.created_at), R.c.passed.is_not(None)],
)
_j = json_elements(T.c.passed, "j")
_PASSING = Statement(
    select(
        func.coalesce(T.c.service, EMPTY),
        func.coalesce(func.nullif(json_item(_j.c.value, 3), EMPTY), S.c.agent, EMPTY),
        json_item(_j.c.value, 0),
        func.count(),
        func.count(),
        *_moments(json_number(_j.c.value, 5)),
    )
    .select_from(T.outerjoin(S, S.c.trace_id == T.c.trace_id), _j)
    .where(*_in_window(T.c.created_at), T.c.passed.is_not(None))
    .group_by(
        func.coalesce(T.c.service, EMPTY),
        func.coalesce(func.nullif(json_item(_j.c.value, 3), EMPTY), S.c.agent, EMPTY),
        json_item(_j.c.value, 0),
    )
)


def _trace_aggregate(row: Sequence[Any]) -> TraceAggregate:
    values = [int(v or 0) if i in _TRACE_COUNTS else float(v or 0) for i, v in enumerate(row[2:], start=2)]
    return TraceAggregate(str(row[0]), str(row[1]), *values)  # type: ignore[arg-type]


def _verdicts(db: Any, window: dict[str, float]) -> list[ResultAggregate]:
    """The `results` rows' and the packed passing results' aggregates, summed per (service, agent, evaluator)."""
    found: dict[tuple[str, str, str], list[float]] = {}
    for query in (_RESULTS, _PASSING):
        for service, agent, evaluator, *figures in execute(db, query, window):
            key = (str(service), str(agent), str(evaluator))
            sums = found.setdefault(key, [0.0] * 5)
            for i, value in enumerate(figures):
                sums[i] += float(value or 0)
    return [
        ResultAggregate(*key, int(verdicts), int(passed), int(scores_n), scores, scores_sq)
        for key, (verdicts, passed, scores_n, scores, scores_sq) in sorted(found.items())
    ]


def window_aggregates(db: Any, since: float, until: float) -> WindowAggregates:
    """Every aggregate of the rows stored at `since` <= time < `until` (module docstring), on `db` (either store's
    connection)."""
    window = {"since": since, "until": until}
    return WindowAggregates(
        traces=[_trace_aggregate(row) for row in execute(db, _TRACES, window)],
        tools=[ToolAggregate(str(s), str(a), str(t), int(n)) for s, a, t, n in execute(db, _TOOLS, window)],
        results=_verdicts(db, window),
        sessions=[
            SessionAggregate(str(service), str(ended), int(n), float(turns or 0), float(squares or 0))
            for service, ended, n, turns, squares in execute(db, _SESSIONS, window)
        ],
        variants=[VariantCount(str(s), str(a), str(v), int(n)) for s, a, v, n in execute(db, _VARIANTS, window)],
    )


# --- episodes ------------------------------------------------------------------------------------------------------
_KEY = ("service", "agent", "signal", "subject")
_EPISODES = Statement(select(*(episodes.c[name] for name in DriftEpisode._fields)).order_by(*_KEY))
_values: dict[str, Any] = {name: bindparam(name) for name in DriftEpisode._fields}
_START = {
    SQLITE: Statement(insert(episodes).prefix_with("OR IGNORE", dialect="sqlite").values(_values)),
    POSTGRESQL: Statement(postgresql.insert(episodes).values(_values).on_conflict_do_nothing()),
}
_END = Statement(delete(episodes).where(*(episodes.c[name] == bindparam(name) for name in _KEY)))


def drift_episodes(db: Any) -> list[DriftEpisode]:
    """The drift episodes stored (still active), by key."""
    return [
        DriftEpisode(str(s), str(a), str(signal), str(subject), str(direction), float(since))
        for s, a, signal, subject, direction, since in execute(db, _EPISODES)
    ]


def record_drift_episodes(db: Any, started: Sequence[DriftEpisode], ended: Sequence[tuple[str, str, str, str]]) -> None:
    """Insert the episodes `started` (one already stored with the same key keeps its direction and `since`) and
    delete those `ended` (keys: service, agent, signal, subject), in the caller's transaction."""
    if started:
        executemany(db, _START[dialect_of(db)], [episode._asdict() for episode in started])
    if ended:
        executemany(db, _END, [dict(zip(_KEY, key, strict=True)) for key in ended])
