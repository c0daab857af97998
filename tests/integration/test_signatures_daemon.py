"""Failure signatures end to end: a real daemon fed through the real OTel SDK exporter with traces whose tool calls
fail counts each evaluator's signature new once and active once on /metrics, with the evaluation in the daemon's
own process (its store reports directly) and in worker processes (their stores' reports travel back with the
batches); two daemons sharing one PostgreSQL count it new once in total."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import send

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "adk_native__tool_agent"
COPIES = 8
NEW = "agent_eval_failure_signatures_new_total"
ACTIVE = "agent_eval_failure_signatures_active"
RECENT = "agent_eval_failure_signatures_new_recent"  # what AgentEvalNewFailureSignature reads


def by_evaluator(daemon, name: str) -> dict[str, float]:
    """`name`'s samples summed per evaluator."""
    totals: dict[str, float] = {}
    for labels, value in daemon.metrics().get(name, []):
        totals[labels["evaluator"]] = totals.get(labels["evaluator"], 0.0) + value
    return totals


def feed(daemon, version: str = "1.5") -> None:
    """COPIES traces of the corpus agent, every tool call failing, until each is evaluated and stored."""
    endpoint = f"127.0.0.1:{daemon.grpc_port}"
    send("grpc", endpoint, "variant", str(CORPUS), "--copies", str(COPIES), "--version", version, "--fail-tools")
    evaluated = lambda: daemon.value("agent_monitor_traces_evaluated_total") >= COPIES  # noqa: E731
    assert daemon.wait_for_condition(evaluated, timeout=60), daemon.output()


def settled(daemon) -> dict[str, float]:
    """The new counts per evaluator once every failing evaluator's signature has been counted (the workers' store
    reports come back with their batches)."""
    failing = lambda: {  # noqa: E731
        labels["evaluator"]
        for labels, value in daemon.metrics().get("agent_eval_results_total", [])
        if labels["outcome"] == "fail" and value > 0
    }
    daemon.wait_for_condition(lambda: failing() and failing() <= set(by_evaluator(daemon, NEW)), timeout=30)
    return by_evaluator(daemon, NEW)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_tool_is_one_new_and_active_signature_per_evaluator(daemon_factory, workers: int) -> None:
    daemon = daemon_factory({"evaluation": {"workers": workers}}, evaluators=None)
    feed(daemon)
    new = settled(daemon)
    assert new.get("error_free") == 1.0, (new, daemon.output())
    assert set(new.values()) == {1.0}, new  # one failure mode per evaluator: every copy the same signature
    active = by_evaluator(daemon, ACTIVE)
    assert active == new, active
    assert by_evaluator(daemon, RECENT) == new  # the workers' store reports count in the recent gauge too
    [(labels, _)] = [s for s in daemon.metrics()[NEW] if s[0]["evaluator"] == "error_free"]
    assert labels["service"] != "unknown" and set(labels) == {"evaluator", "service"}
    feed(daemon, "1.6")  # the same failure again: not new, still one active
    assert settled(daemon) == new and by_evaluator(daemon, ACTIVE) == active


def _count(url: str) -> int:
    """The error_free signature's count in the shared database."""
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute("SELECT SUM(count) FROM signatures WHERE evaluator = 'error_free'").fetchone()
    return int(row[0] or 0)


def test_two_daemons_on_one_postgresql_count_it_new_once(daemon_factory, postgres_url: str) -> None:
    first = daemon_factory({"store": {"url": postgres_url}, "evaluation": {"workers": 2}}, evaluators=None)
    second = daemon_factory({"store": {"url": postgres_url}, "evaluation": {"workers": 1}}, evaluators=None)
    feed(first)
    new = settled(first)
    assert new.get("error_free") == 1.0, (new, first.output())
    feed(second)
    stored = lambda: _count(postgres_url) >= 2 * COPIES  # noqa: E731  # the second daemon's sightings are in
    assert second.wait_for_condition(stored, timeout=30), _count(postgres_url)
    assert sum(by_evaluator(second, NEW).values()) == 0  # new only once, on the first
    assert by_evaluator(first, RECENT) == new and sum(by_evaluator(second, RECENT).values()) == 0  # summed: once
    assert by_evaluator(second, ACTIVE) == by_evaluator(first, ACTIVE)  # active in each
