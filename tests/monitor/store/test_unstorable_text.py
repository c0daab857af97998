"""Text no database takes as it is (lone surrogates, NUL characters) in every field a trace brings, and rows a
database refuses all the same: on SQLite and PostgreSQL, such a trace costs no other row, its text is stored with
U+FFFD in place, and what is lost is counted per result."""

from __future__ import annotations

import json
from typing import Any

from evaluators.sdk import builtin
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.outcomes import LateResults
from monitor.review.of_store import reader_of
from monitor.store.sqlite import ResultStore
from monitor.store.storable import storable, storable_json
from tests.monitor.store.test_degrade import Recorded
from tests.support.backends import Backend
from tests.support.spanfactory import make_span, trace_of
from tests.support.store_builders import agent_trace, outcome, row

BAD = "\ud800\x00"  # a lone surrogate and a NUL
STORED = "\ufffd\ufffd"
EVALUATORS = ["error_free", "tool_success_rate", "latency"]


def bad_trace(trace_id: str):
    """An agent trace with BAD in its service and agent names, span names, status message, input, output and
    attribute values."""
    resource = {"service.name": f"shop{BAD}"}
    agent = make_span(
        f"invoke_agent plan{BAD}",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"plan{BAD}"},
        trace_id=trace_id,
        resource=resource,
    )
    messages = [{"role": "user", "parts": [{"type": "text", "content": f"where{BAD}?"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"Par{BAD}is"}]}]
    chat = make_span(
        f"chat gpt-4o{BAD}",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": f"gpt-4o{BAD}",
            "gen_ai.agent.name": f"plan{BAD}",
            "gen_ai.input.messages": json.dumps(messages, ensure_ascii=False),
            "gen_ai.output.messages": json.dumps(answer, ensure_ascii=False),
        },
        trace_id=trace_id,
        parent=agent,
        resource=resource,
    )
    tool = make_span(
        f"execute_tool calc{BAD}",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": f"calc{BAD}",
            "gen_ai.agent.name": f"plan{BAD}",
            "gen_ai.tool.call.arguments": json.dumps({"x": BAD}, ensure_ascii=False),
        },
        trace_id=trace_id,
        parent=agent,
        resource=resource,
        status=2,
        status_message=f"division by zero{BAD}",
    )
    return trace_of(agent, chat, tool)


def parsed(value: Any) -> Any:
    """A JSON column as read behind the store's back (psycopg parses jsonb, sqlite3 does not)."""
    return json.loads(value) if isinstance(value, str) else value


def evaluator() -> TraceEvaluator:
    return TraceEvaluator([ConfiguredEvaluator(builtin(n), n) for n in EVALUATORS], store_results="all")


def test_storable_replaces_lone_surrogates_and_nul_only() -> None:
    assert storable("plain") == "plain"
    assert storable("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
    assert storable(f"a{BAD}b") == f"a{STORED}b"
    assert storable_json(json.dumps([f"a{BAD}", "\\u0000"], ensure_ascii=False)) == json.dumps(
        [f"a{STORED}", "\\u0000"], ensure_ascii=False
    )


def test_a_lone_surrogate_or_nul_in_any_text_costs_no_other_row(backend: Backend) -> None:
    bad = evaluator().outcome(bad_trace("b" * 32))
    assert any(BAD in (r.explanation or "") for r in bad.results)  # the status message reaches an explanation
    good = [evaluator().outcome(agent_trace(f"{n}" * 32)) for n in range(1, 6)]
    late = LateResults(
        "1" * 32, "shop", (row("judge", False, explanation=f"bad{BAD}"), row("judge2", True, explanation=BAD))
    )
    seen = Recorded()
    store = backend.store(health=seen.health())
    store.write([good[0], bad, *good[1:]])
    store.write([late])
    assert seen.errors == {} and store.available
    assert store.count("traces") == 6
    service, given, answer, agents, detail = backend.rows(
        "SELECT service, input, output, agents, detail FROM traces WHERE trace_id = ?", ("b" * 32,)
    )[0]
    assert (service, given, answer) == (f"shop{STORED}", f"where{STORED}?", f"Par{STORED}is")
    assert parsed(agents) == [f"plan{STORED}"]
    names = [step[4] for step in parsed(detail)["steps"]]
    assert names == [f"plan{STORED}", f"chat gpt-4o{STORED}", f"calc{STORED}"]  # steps: agent, LLM call, tool
    explanations = [e for (e,) in backend.rows("SELECT explanation FROM results WHERE trace_id = ?", ("b" * 32,))]
    assert any(f"division by zero{STORED}" in e for e in explanations)
    assert not any("\ud800" in (e or "") for e in explanations)
    assert [e for (e,) in backend.rows("SELECT explanation FROM results WHERE evaluator = 'judge'")] == [f"bad{STORED}"]
    trace = reader_of(store).trace("b" * 32)
    assert trace is not None and trace.summary.service == f"shop{STORED}"
    store.close()


def test_a_row_the_database_refuses_costs_only_itself_and_its_results_are_counted(backend: Backend) -> None:
    lost: dict[str, int] = {}
    seen = Recorded()
    health = seen.health()
    health._on_lost = lambda reason, n: lost.__setitem__(reason, lost.get(reason, 0) + n)
    store = backend.store(health=health)
    refused = outcome("f" * 32, row("a", False), row("b", True), row("c", None, "needs_ground_truth"))
    refused = refused._replace(span_count=2**70)  # too large for SQLite's INTEGER and PostgreSQL's integer
    batch = [outcome(f"{n:032x}", row("a", False)) for n in range(1, 10)]
    store.write([*batch[:4], refused, *batch[4:]])
    assert store.count("traces") == 9  # the other rows of the batch are written
    assert lost == {"rejected": 3}  # per result: a failing one, a passing one, a skip
    assert seen.errors == {"write": 1} and seen.changes == [] and store.available
    store.close()


def test_lost_results_of_a_store_that_fails_as_a_whole_are_counted_per_result(tmp_path) -> None:
    seen = Recorded()
    lost: dict[str, int] = {}
    health = seen.health()
    health._on_lost = lambda reason, n: lost.__setitem__(reason, lost.get(reason, 0) + n)
    path = tmp_path / "r.db"
    path.write_bytes(b"not a database " * 500)
    store = ResultStore(path, health=health)
    store.write([outcome(f"{n:032x}", row("a", False), row("b", True)) for n in range(1, 6)])
    assert lost == {"unavailable": 10} and seen.errors == {"open": 1, "write": 1}
    store.close()
