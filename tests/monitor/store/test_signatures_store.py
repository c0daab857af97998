"""Failure signatures in the result store, on SQLite and on a real PostgreSQL: the upsert is exact and bounded,
`results.signature` points to it, `regressed_at` is set after `resolve_after` without a sighting, new is counted
once (at `min_count` within the window), and retention prunes the signatures last seen before it."""

from __future__ import annotations

import json
import time

from evaluators.signatures import Failure, FailureSignature, failure_signature
from monitor.config.signatures import SignaturesConfig
from monitor.outcomes import CallFigures, LateResults, ResultRow, TraceDetailRow, TraceOutcome
from monitor.store.signatures import MAX_TRACES, MAX_VALUES
from tests.support.backends import Backend

GROUPED = ("services", "agents", "models", "variants", "versions", "example_traces")


def signature(tool: str = "convert_currency", message: str = "HTTP 503 for request 42") -> FailureSignature:
    return failure_signature("error_free", "trace", None, Failure("tool", tool, "http_503", message))


def failing(sig: FailureSignature | None, model: str = "gpt-4o") -> ResultRow:
    return ResultRow(None, None, model, "error_free", "trace", 0.0, False, None, "tool failed", None, 0.0, sig)


def outcome(n: int, sig: FailureSignature | None, *, service: str = "shop", version: str = "1.5") -> TraceOutcome:
    rows = (failing(sig), ResultRow(None, None, None, "ok", "trace", 1.0, True, None, "", None, 0.0))
    return TraceOutcome(
        f"{n:032x}", service, 0.1, True, (), (), None, None, 1, 100.0, 0.0, rows, variant="b", version=version
    )


def stored(backend: Backend, sid: str) -> dict:
    columns = ("count", "first_seen", "last_seen", "example", "template", "regressed_at", *GROUPED)
    [row] = backend.rows(f"SELECT {', '.join(columns)} FROM signatures WHERE id = ?", (sid,))
    found = dict(zip(columns, row, strict=True))
    for name in GROUPED:
        found[name] = json.loads(found[name])
    return found


def test_every_sighting_is_counted_and_the_sets_stay_bounded(backend: Backend) -> None:
    sig = signature()
    store = backend.store(results="failing")
    try:
        for start in range(0, 30, 3):  # ten writes of three traces, each of another service and version
            store.write([outcome(n, sig, service=f"svc{n}", version=f"1.{n}") for n in range(start, start + 3)])
        store.write([outcome(99, signature(message="HTTP 503 for request 7"))])  # same signature, other example
        news = store.news.take()
    finally:
        store.close()
    row = stored(backend, sig.id)
    assert row["count"] == 31
    assert row["services"] == [f"svc{n}" for n in range(11, 30)] + ["shop"]  # the last 20 distinct
    assert len(row["versions"]) == MAX_VALUES and row["versions"][-1] == "1.5"
    assert row["models"] == ["gpt-4o"] and row["variants"] == ["b"] and row["agents"] == []
    assert row["example_traces"] == [f"{n:032x}" for n in (*range(21, 30), 99)]  # newest last
    assert len(row["example_traces"]) == MAX_TRACES
    assert row["example"] == "HTTP 503 for request 42"  # the first one kept
    assert row["template"] == sig.template and row["regressed_at"] is None
    assert row["first_seen"] <= row["last_seen"]
    assert news == {("error_free", "svc0"): 1}  # new once, for the service of its first sighting
    results = backend.rows("SELECT signature, passed FROM results ORDER BY id")
    assert results == [(sig.id, 0)] * 31 or results == [(sig.id, False)] * 31


def test_results_without_a_signature_and_late_results(backend: Backend) -> None:
    judged = failure_signature("helpfulness", "trace", None, Failure(error_type="unhelpful"))
    store = backend.store(results="all")
    try:
        store.write([outcome(1, None)])
        store.write([LateResults(f"{1:032x}", "shop", (failing(judged)._replace(evaluator="helpfulness"),), "b", "2")])
        news = store.news.take()
    finally:
        store.close()
    assert backend.rows("SELECT evaluator, signature FROM results ORDER BY id") == [
        ("error_free", None),
        ("helpfulness", judged.id),
    ]
    row = stored(backend, judged.id)
    assert (row["count"], row["versions"], row["example_traces"]) == (1, ["2"], [f"{1:032x}"])
    assert news == {("helpfulness", "shop"): 1}


def test_seen_again_after_resolve_after_it_has_regressed(backend: Backend) -> None:
    sig = signature()
    config = SignaturesConfig(resolve_after=3600)
    store = backend.store(signatures=config)
    try:
        store.write([outcome(1, sig)])
        store.write([outcome(2, sig)])  # seen again at once: not a regression
        assert stored(backend, sig.id)["regressed_at"] is None
        backend.execute("UPDATE signatures SET last_seen = last_seen - 3601, first_seen = first_seen - 7200")
        before = time.time()
        store.write([outcome(3, sig)])
        news = store.news.take()
    finally:
        store.close()
    row = stored(backend, sig.id)
    assert row["regressed_at"] is not None and row["regressed_at"] >= before - 1
    assert row["count"] == 3 and row["last_seen"] >= before - 1
    assert news == {("error_free", "shop"): 1}  # the first write only: a regression is not new


def test_new_once_it_reaches_min_count_within_the_window(backend: Backend) -> None:
    quick, slow = signature("quick"), signature("slow")
    store = backend.store(signatures=SignaturesConfig(min_count=3, window=600))
    try:
        store.write([outcome(1, quick), outcome(2, slow)])
        assert store.news.take() == {}
        backend.execute("UPDATE signatures SET first_seen = first_seen - 601 WHERE id = ?", (slow.id,))
        store.write([outcome(3, quick), outcome(4, quick), outcome(5, slow), outcome(6, slow)])
        assert store.news.take() == {("error_free", "shop"): 1}  # quick: 3 within the window; slow: too late
        store.write([outcome(7, quick)])
        assert store.news.take() == {}  # counted once
    finally:
        store.close()


def test_retention_prunes_the_signatures_last_seen_before_it(backend: Backend) -> None:
    old, recent = signature("old"), signature("recent")
    store = backend.store(retention_seconds=3600)
    try:
        store.write([outcome(1, old), outcome(2, recent)])
        backend.execute("UPDATE signatures SET last_seen = last_seen - 7200 WHERE id = ?", (old.id,))
        store.prune()
    finally:
        store.close()
    assert backend.rows("SELECT id FROM signatures") == [(recent.id,)]


def test_a_trace_level_result_is_seen_in_every_agent_and_model_of_its_trace(backend: Backend) -> None:
    """error_free fails at trace level (no agent, no model of its own): its signature lists its trace's agents (the
    step tree's) and the models of its LLM calls; an agent-level result keeps its own agent and model."""
    sig = signature()
    trace_level = ResultRow(None, None, None, "error_free", "trace", 0.0, False, None, "tool failed", None, 0.0, sig)
    agent_sig = failure_signature("tool_success_rate", "agent", "booker", Failure("tool", "convert_currency"))
    agent_level = ResultRow(None, "booker", "gpt-4o", "tool_success_rate", "agent", 0.0, False, None, "", None, 0.0,
                            agent_sig)  # fmt: skip
    detail = TraceDetailRow(("planner", "booker"), (), (), (), (), False)
    llm_calls = tuple(
        CallFigures(model, "", "", ok, None, None)
        for model, ok in (("gpt-4o-mini", True), ("gpt-4o", True), ("gpt-4o-mini", False))
    )
    trace = TraceOutcome(
        "a" * 32, "shop", 0.1, True, llm_calls, (), None, None, 1, 100.0, 0.0, (trace_level, agent_level),
        detail=detail,
    )  # fmt: skip
    store = backend.store(results="failing")
    try:
        store.write([trace])
    finally:
        store.close()
    row = stored(backend, sig.id)
    assert row["agents"] == ["planner", "booker"] and row["models"] == ["gpt-4o-mini", "gpt-4o"]
    own = stored(backend, agent_sig.id)
    assert own["agents"] == ["booker"] and own["models"] == ["gpt-4o"]
