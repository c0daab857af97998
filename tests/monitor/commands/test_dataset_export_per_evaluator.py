"""`dataset export` decides a confirmed-good run per evaluator, on SQLite and PostgreSQL: a run whose judge verdict a
reviewer confirmed as a pass is a good trajectory for that judge even though another evaluator's failure of the
same trace was confirmed too; the metadata names both, and `--evaluator` lets only that evaluator's reviews
decide. A confirmed failure of the same evaluator (on any of its results) still takes the trajectory away."""

from __future__ import annotations

from pathlib import Path

from evaluators.sdk import EvalResult, evaluator
from evaluators.traces import Trace, load_traces
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.signing import Signer
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.store.reviews import ResultKey, ReviewInput, write_review
from tests.monitor.commands.test_dataset_export import export, faithful, record, tasks_of
from tests.support.backends import Backend

TRACK, REFUND = "Track order 9", "Refund order 42"


@evaluator("strict_tools")
def strict_tools(trace: Trace) -> EvalResult:
    """A stand-in for error_free: fails every run (a tool step it disliked)."""
    return EvalResult(0.0, explanation="a tool step failed")


def test_a_judges_confirmed_pass_gives_the_trajectory_despite_another_confirmed_failure(
    backend: Backend, tmp_path: Path
) -> None:
    runs = [(TRACK, "On its way", ["lookup_order", "track"]), (REFUND, "Refund issued", ["lookup_order", "refund"])]
    traces = [load_traces(record(tmp_path / f"run{n}.pb", *run))[0] for n, run in enumerate(runs)]
    track, refund = (t.trace_id for t in traces)
    engine = TraceEvaluator(
        [ConfiguredEvaluator(faithful, "faithful"), ConfiguredEvaluator(strict_tools, "strict_tools")],
        store_results="all",
        signer=Signer(),
    )
    store = backend.store(results="all")
    try:
        spans = {}
        for trace in traces:
            outcome = engine.outcome(trace)
            spans[trace.trace_id] = outcome.results[0].span_id or ""
            store.write([outcome])

        def review(trace_id: str, name: str, agreement: str, at: float) -> None:
            key = ResultKey(trace_id, name, "trace", spans[trace_id])
            store.transaction(lambda db: write_review(db, ReviewInput(key, agreement, "ann"), at))  # type: ignore[arg-type]

        review(track, "faithful", "agree", 100.0)  # the judge's pass confirmed: a good run for the judge
        review(track, "strict_tools", "agree", 101.0)  # its failure confirmed as well
        review(refund, "faithful", "agree", 102.0)  # the judge's failure confirmed: a bad run for the judge
        review(refund, "strict_tools", "disagree", 103.0)  # a false alarm of strict_tools

        out = tmp_path / "all.json"
        assert export(backend.location, "--reviewed", "-o", str(out))[0] == 0
        tasks = tasks_of(out)
        good = tasks[track]
        assert good["expected_trajectory"] == [{"tool": "lookup_order"}, {"tool": "track"}]
        assert good["constraints"]["max_latency_ms"] == 1500.0
        meta = good["metadata"]
        assert (meta["confirmed_good_for"], meta["confirmed_bad_for"], meta["confirmed_good_by"]) == (
            ["faithful"], ["strict_tools"], "ann")  # fmt: skip
        # the refund run is good for strict_tools (a false alarm) and bad for the judge: good for strict_tools
        assert tasks[refund]["expected_trajectory"] == [{"tool": "lookup_order"}, {"tool": "refund"}]
        assert tasks[refund]["metadata"]["confirmed_good_for"] == ["strict_tools"]
        assert tasks[refund]["metadata"]["confirmed_bad_for"] == ["faithful"]

        # only the chosen evaluator's reviews decide
        assert export(backend.location, "--reviewed", "--evaluator", "strict_tools", "-o", str(out))[0] == 0
        tasks = tasks_of(out)
        assert "expected_trajectory" not in tasks[track] and tasks[track]["metadata"]["confirmed_bad_for"] == [
            "strict_tools"]  # fmt: skip
        assert tasks[refund]["expected_trajectory"] == [{"tool": "lookup_order"}, {"tool": "refund"}]
        assert export(backend.location, "--reviewed", "--evaluator", "faithful", "-o", str(out))[0] == 0
        tasks = tasks_of(out)
        assert tasks[track]["expected_trajectory"] == [{"tool": "lookup_order"}, {"tool": "track"}]
        assert "expected_trajectory" not in tasks[refund] and "constraints" not in tasks[refund]
    finally:
        store.close()
