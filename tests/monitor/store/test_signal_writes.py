"""Drift's rows of a stored trace (store/signal_writes.py): its `trace_signals` row and `trace_tools` rows, written
with its trace row on both databases, once however often it is stored, and removed by the retention with it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from monitor.outcomes import CallFigures, LateResults, TraceOutcome
from monitor.store.sqlite import ResultStore
from tests.monitor.store.test_retention import fill
from tests.support.backends import Backend
from tests.support.store_builders import detail, outcome, row

SIGNALS = (
    "SELECT trace_id, created_at, service, agent, variant, has_error, llm_calls, tool_calls, tool_failures,"
    " response_chars, tokens, cost_usd, duration_ms FROM trace_signals ORDER BY trace_id"
)
TOOLS = "SELECT trace_id, tool, created_at, service, agent FROM trace_tools ORDER BY trace_id, tool"


def _call(agent: str, tokens: tuple[int, int, int, int, int] | None, cost: float | None) -> CallFigures:
    return CallFigures("gpt-4o", agent, "openai", True, tokens, cost)


def _full(trace_id: str = "a" * 32) -> TraceOutcome:
    """Two agents (planner first), three calls (two reporting usage, one priced), three tool calls of two tools
    (one failing), an answer, a variant."""
    calls = (_call("critic", (10, 1, 2, 3, 4), 0.25), _call("", None, None), _call("planner", (5, 0, 0, 5, 0), None))
    tools = (("search", True), ("calc", False), ("search", True))
    base = outcome(trace_id, row("relevance", False), answer="Paris.", variant="v2",
                   detail=detail(agents=("planner", "critic"), tools=("search", "calc")))  # fmt: skip
    return base._replace(calls=calls, tools=tools, has_error=True, duration_ms=1234.5)


def test_a_stored_trace_has_its_signal_row_and_a_row_per_distinct_tool(backend: Backend) -> None:
    store = backend.store()
    store.write([_full()])
    [(trace_id, at, *figures)] = backend.rows(SIGNALS)
    [(stored_at,)] = backend.rows("SELECT created_at FROM traces")
    assert (trace_id, at) == ("a" * 32, stored_at)  # the trace row's time
    assert figures == ["svc", "planner", "v2", 1, 3, 3, 1, len("Paris."), 20 + 10, 0.25, 1234.5]
    assert backend.rows(TOOLS) == [("a" * 32, "calc", at, "svc", "planner"), ("a" * 32, "search", at, "svc", "planner")]
    store.close()


def test_without_detail_usage_price_or_answer_the_figures_are_null_and_the_agent_a_calls(backend: Backend) -> None:
    store = backend.store()
    bare = outcome("b" * 32, row("a", False), answer=None)
    helper = outcome("c" * 32, row("a", False))._replace(calls=(_call("", None, None), _call("helper", None, None)))
    store.write([bare, helper])
    rows = [r[2:] for r in backend.rows(SIGNALS)]
    assert rows == [
        ("svc", "", "", 0, 0, 0, 0, None, None, None, 1000.0),
        ("svc", "helper", "", 0, 2, 0, 0, len("out"), None, None, 1000.0),
    ]
    assert backend.rows(TOOLS) == []
    store.close()


def test_a_trace_stored_again_is_counted_once_at_its_new_time(backend: Backend) -> None:
    store = backend.store()
    store.write([_full()])
    backend.execute("UPDATE traces SET created_at = created_at - 500")
    backend.execute("UPDATE trace_signals SET created_at = created_at - 500")
    store.write([_full()])  # a replay: the trace row is replaced, and so are its drift rows
    [(signal_at,)] = backend.rows("SELECT created_at FROM trace_signals")
    [(trace_at,)] = backend.rows("SELECT created_at FROM traces")
    assert signal_at == trace_at
    assert sorted(tool for _, tool, *_ in backend.rows(TOOLS)) == ["calc", "search"]
    store.close()


def test_with_results_failing_a_passing_trace_has_its_signal_row_but_no_trace_row(backend: Backend) -> None:
    store = backend.store(results="failing")
    store.write([outcome("d" * 32, row("a", True)), outcome("e" * 32, row("a", False))])
    assert [r[0] for r in backend.rows(SIGNALS)] == ["d" * 32, "e" * 32]
    assert backend.scalar("SELECT COUNT(*) FROM traces") == 1
    store.close()


def test_late_results_and_sessions_write_no_signal_rows(backend: Backend) -> None:
    store = backend.store()
    store.write([outcome("f" * 32, row("a", False))])
    store.write([LateResults("f" * 32, "svc", (row("judge", True), row("judge2", False)))])
    assert backend.scalar("SELECT COUNT(*) FROM trace_signals") == 1
    store.close()


def test_retention_by_age_removes_the_signal_rows_with_their_traces(backend: Backend) -> None:
    store = backend.store(retention_seconds=100)
    store.write([_full("1" * 32)])
    for table in ("traces", "results", "trace_signals", "trace_tools"):
        backend.execute(f"UPDATE {table} SET created_at = created_at - 1000")
    store.write([_full("2" * 32)])
    store.prune()
    assert [r[0] for r in backend.rows(SIGNALS)] == ["2" * 32]
    assert {r[0] for r in backend.rows(TOOLS)} == {"2" * 32}
    store.close()


def test_retention_by_size_removes_the_signal_rows_of_the_traces_it_deletes(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = ResultStore(path, max_size=256 * 1024, retention_seconds=1e12)
    fill(store, 400)  # trace n and its drift row at time n
    assert store.enforce_size() > 0
    store.close()
    with sqlite3.connect(path) as db:
        kept = {t for (t,) in db.execute("SELECT trace_id FROM traces")}
        assert kept and {t for (t,) in db.execute("SELECT trace_id FROM trace_signals")} == kept


def test_a_trace_twice_in_one_write_keeps_one_signal_row_its_last(backend: Backend) -> None:
    store = backend.store()
    store.write([_full(), _full()._replace(output="Paris, France."), outcome("9" * 32, row("a", False))])
    assert [(r[0], r[9]) for r in backend.rows(SIGNALS)] == [("9" * 32, len("out")), ("a" * 32, len("Paris, France."))]
    assert sorted(tool for _, tool, *_ in backend.rows(TOOLS)) == ["calc", "search"]
    store.close()
