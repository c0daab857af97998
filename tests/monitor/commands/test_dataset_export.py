"""`agent-monitor dataset export`, on SQLite and PostgreSQL: agent runs recorded with the OTel SDK are evaluated and
stored as the daemon does, reviewed (monitor/store/reviews.py), exported as tasks, and the tasks then judge the
next version's runs in `agent-monitor evaluate --dataset` (the issue's round trip); the filters, a pruned trace,
CSV, and the errors."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as otel
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evaluators.sdk import Constraints, Dataset, EvalResult, TrajectoryStep, evaluator
from evaluators.traces import Trace, load_traces
from monitor.cli import main
from monitor.commands import evaluate_cmd
from monitor.commands.dataset_export import MARGIN
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.signing import Signer
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.store.reviews import ResultKey, ReviewInput, write_review
from monitor.store.writer import QueuedResultStore
from tests.support.backends import Backend

MS = 1_000_000
START = 1_700_000_000_000_000_000
CAPITAL, REFUND, CANCEL, TRACK = "What is the capital of France?", "Refund order 42", "Cancel order 7", "Track order 9"


@evaluator("faithful")
def faithful(trace: Trace) -> EvalResult:
    """A stand-in for a judge: every answer but the tracking one is "unfaithful", the capital one for its own reason."""
    if trace.output == "On its way":
        return EvalResult(1.0, explanation="supported")
    reason = "contradicts the sources" if trace.output == "Lyon" else "an unsupported claim"
    return EvalResult(0.0, explanation=reason)


def record(path: Path, question: str, answer: str, tools: list[str], task_id: str | None = None) -> Path:
    """One agent run recorded with the OTel SDK (an agent span, a priced gpt-4o call, then the tool calls, 1 s in
    all), written as an OTLP protobuf export file."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
    agent = tracer.start_span("invoke_agent support", attributes=root | ({"task.id": task_id} if task_id else {}),
                              start_time=START)  # fmt: skip
    inside = otel.set_span_in_context(agent)
    messages = {
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]),
    }
    chat = tracer.start_span(
        "chat gpt-4o",
        context=inside,
        start_time=START + MS,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.agent.name": "support",
                    "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 100, **messages},
    )  # fmt: skip
    chat.end(end_time=START + 300 * MS)
    for n, name in enumerate(tools):
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.agent.name": "support"}
        step = tracer.start_span(f"execute_tool {name}", context=inside, start_time=START + (400 + 100 * n) * MS,
                                 attributes=attributes)  # fmt: skip
        step.end(end_time=START + (450 + 100 * n) * MS)
    agent.end(end_time=START + 1000 * MS)
    path.write_bytes(encode_spans(memory.get_finished_spans()).SerializeToString())
    return path


class Production:
    """Four runs of the current version in the store, judged by `faithful`: A (capital, answered "Lyon"), B (a
    refund), C (a cancellation) fail; D (tracking) passes. Reviewed: A's failure confirmed with the corrected
    answer "Paris"; B's a false alarm (a good run); D's pass confirmed (a good run); C not reviewed."""

    def __init__(self, backend: Backend, directory: Path) -> None:
        directory.mkdir()
        runs = [
            (CAPITAL, "Lyon", ["search"]),
            (REFUND, "Refund issued", ["lookup_order", "refund"]),
            (CANCEL, "Cancelled", ["lookup_order", "cancel"]),
            (TRACK, "On its way", ["lookup_order", "track"]),
        ]
        files = [record(directory / f"run{n}.pb", *run) for n, run in enumerate(runs)]
        traces = [load_traces(path)[0] for path in files]
        self.a, self.b, self.c, self.d = (t.trace_id for t in traces)
        engine = TraceEvaluator([ConfiguredEvaluator(faithful, "faithful")], store_results="all", signer=Signer())
        self.store: QueuedResultStore = backend.store(results="all")
        self.spans: dict[str, str] = {}  # trace id -> the span its trace-level result names (the root)
        for trace in traces:  # one write each: newest last (A oldest, D newest)
            outcome = engine.outcome(trace)
            self.spans[trace.trace_id] = outcome.results[0].span_id or ""
            self.store.write([outcome])
        self.backend = backend
        [(self.lyon,)] = backend.rows("SELECT signature FROM results WHERE trace_id = ?", (self.a,))
        [(self.unsupported,)] = backend.rows("SELECT signature FROM results WHERE trace_id = ?", (self.b,))
        self.review(self.a, "agree", "ann", 100.0, corrected_label="Paris", note="Paris, not Lyon")
        self.review(self.b, "disagree", "bob", 101.0)
        self.review(self.d, "agree", "ann", 102.0)

    def review(self, trace_id: str, agreement: Any, reviewer: str, at: float, **more: Any) -> None:
        review = ReviewInput(
            ResultKey(trace_id, "faithful", "trace", self.spans[trace_id]), agreement, reviewer, **more
        )
        self.store.transaction(lambda db: write_review(db, review, at))


@pytest.fixture
def production(backend: Backend, tmp_path: Path) -> Any:
    made = Production(backend, tmp_path / "production")
    yield made
    made.store.close()


def export(store: str, *options: str) -> tuple[int, str, str]:
    """`agent-monitor dataset export --store STORE OPTIONS` through the CLI's main: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(["dataset", "export", "--store", store, *options])
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def tasks_of(path: Path) -> dict[str, dict[str, Any]]:
    return {task["task_id"]: task for task in json.loads(path.read_text(encoding="utf-8"))["tasks"]}


def evaluate(dataset: Path, *paths: Path) -> dict[str, Any]:
    args = argparse.Namespace(paths=[str(p) for p in paths], spec=None, dataset=str(dataset), format="json", worst=50)
    out, err = io.StringIO(), io.StringIO()
    assert evaluate_cmd.run(args, out=out, err=err) == 0, err.getvalue()
    return json.loads(out.getvalue())


def failures(report: dict[str, Any], name: str) -> list[str]:
    """The trace ids of evaluator `name`'s failing results in the report (its `worst` list leaves passes out)."""
    return [r["trace_id"] for r in report["worst"] if r["evaluator"] == name and r["passed"] is False]


# --- the round trip ------------------------------------------------------------------------------


def test_reviewed_failures_become_tasks_that_judge_the_next_versions_runs(production: Production, tmp_path: Path):
    """The issue's done-when: stored → reviewed → `dataset export` (a real subprocess) → `evaluate --dataset` on new
    runs of the same tasks: the run giving the corrected answer passes exact_match and the one repeating the wrong
    answer fails it; the run on the confirmed tool path passes tool_trajectory and the one leaving a tool out fails."""
    tasks = tmp_path / "tasks.json"
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "dataset", "export", "--reviewed", "--store", production.backend.location,
         "-o", str(tasks)],
        capture_output=True, text=True, timeout=120, env=os.environ.copy(), check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"wrote 3 tasks to {tasks}: 1 with an expected output (a reviewer's correction), 2 with an expected "
        "trajectory and constraints (runs confirmed good)\n"
    )
    new = tmp_path / "next"
    new.mkdir()
    right = record(new / "right.pb", CAPITAL, "Paris", ["search"])
    wrong = record(new / "wrong.pb", CAPITAL, "Lyon", ["search"])
    same_path = record(new / "same_path.pb", "Please refund order 42", "Done", ["lookup_order", "refund"],
                       task_id=production.b)  # fmt: skip  # matched by its task id attribute
    short_path = record(new / "short_path.pb", REFUND, "Done", ["refund"])  # matched by its input
    ids = {name: load_traces(path)[0].trace_id for name, path in
           (("right", right), ("wrong", wrong), ("same_path", same_path), ("short_path", short_path))}  # fmt: skip

    report = evaluate(tasks, new)

    assert report["dataset"] == {
        "name": "tasks",
        "tasks": 3,
        "matched": {"task_id": 1, "input": 3, "unmatched": 0},
        "tasks_without_trace": 1,  # D: no new run of it
    }
    evaluators = {e["evaluator"]: e for e in report["evaluators"]}
    # scored on the two runs of the task with the expected output (a skip on the others), one failing: `wrong`
    assert (evaluators["exact_match"]["scored"], evaluators["exact_match"]["passed"]) == (2, 1)
    assert failures(report, "exact_match") == [ids["wrong"]]
    # scored on the two runs of the task with the confirmed tool path, one failing: `short_path`
    assert (evaluators["tool_trajectory"]["scored"], evaluators["tool_trajectory"]["passed"]) == (2, 1)
    assert failures(report, "tool_trajectory") == [ids["short_path"]]
    assert evaluators["constraints"]["scored"] == evaluators["constraints"]["passed"] == 2  # within the budget


def test_the_tasks_hold_the_trace_the_correction_the_confirmed_path_and_its_budget(
    production: Production, tmp_path: Path
) -> None:
    code, _, err = export(production.backend.location, "--reviewed", "-o", str(tmp_path / "t.json"))
    assert (code, err) == (0, "")
    tasks = tasks_of(tmp_path / "t.json")
    assert list(tasks) == [production.d, production.b, production.a]  # newest review first
    capital, refund, track = tasks[production.a], tasks[production.b], tasks[production.d]
    assert capital["input"] == CAPITAL and capital["expected_output"] == "Paris"
    assert "expected_trajectory" not in capital and "constraints" not in capital  # a run confirmed as bad
    assert refund["input"] == REFUND and "expected_output" not in refund
    assert refund["expected_trajectory"] == [{"tool": "lookup_order"}, {"tool": "refund"}]
    [(detail, duration)] = production.backend.rows(
        "SELECT detail, duration_ms FROM traces WHERE trace_id = ?", (production.b,)
    )
    cost = (detail if isinstance(detail, dict) else json.loads(detail))["cost"][
        0
    ]  # the store's price of the run's gpt-4o call
    assert cost > 0 and duration == 1000.0
    assert refund["constraints"] == {"max_cost": round(cost * MARGIN, 10), "max_latency_ms": 1500.0}
    assert track["expected_trajectory"] == [{"tool": "lookup_order"}, {"tool": "track"}]
    assert capital["metadata"] == {
        "source": "agent-monitor",
        "trace_id": production.a,
        "service": "shop",
        "variant": "",
        "trace_stored": True,
        "evaluators": ["faithful"],
        "signatures": [production.lyon],
        "reviewers": ["ann"],
        "expected_output_by": "ann",
        "confirmed_bad_for": ["faithful"],
        "results": [
            {
                "evaluator": "faithful",
                "level": "trace",
                "outcome": "fail",
                "span_id": production.spans[production.a],
                "score": 0.0,
                "signature": production.lyon,
                "review": {
                    "reviewer": "ann",
                    "agreement": "agree",
                    "reviewed_at": 100.0,
                    "corrected_label": "Paris",
                    "note": "Paris, not Lyon",
                },
            }
        ],
    }
    assert refund["metadata"]["confirmed_good_by"] == "bob" and track["metadata"]["results"][0]["outcome"] == "pass"
    assert refund["metadata"]["confirmed_good_for"] == ["faithful"] and "confirmed_bad_for" not in refund["metadata"]


# --- the selection -------------------------------------------------------------------------------


def test_by_default_the_failing_results_whether_reviewed_or_not(production: Production, tmp_path: Path) -> None:
    out = tmp_path / "failing.json"
    assert export(production.backend.location, "-o", str(out))[0] == 0
    tasks = tasks_of(out)
    assert list(tasks) == [production.c, production.b, production.a]  # D passed; newest first
    assert tasks[production.c]["input"] == CANCEL and set(tasks[production.c]) == {"task_id", "input", "metadata"}
    assert (
        tasks[production.c]["metadata"]["reviewers"] == []
        and "review" not in tasks[production.c]["metadata"]["results"][0]
    )
    assert tasks[production.a]["expected_output"] == "Paris"  # its review counts though it was not asked for


def test_a_signature_an_evaluator_and_a_time_narrow_the_selection(production: Production, tmp_path: Path) -> None:
    location, out = production.backend.location, tmp_path / "x.json"
    assert export(location, "--signature", production.unsupported, "-o", str(out))[0] == 0
    assert list(tasks_of(out)) == [production.c, production.b]
    assert tasks_of(out)[production.c]["metadata"]["signatures"] == [production.unsupported]
    assert export(location, "--reviewed", "--signature", production.lyon, "-o", str(out))[0] == 0
    assert list(tasks_of(out)) == [production.a]
    assert export(location, "--reviewed", "--since", "101", "-o", str(out))[0] == 0  # reviewed at 101 and 102
    assert list(tasks_of(out)) == [production.d, production.b]
    assert export(location, "--reviewed", "--limit", "1", "-o", str(out))[0] == 0
    assert list(tasks_of(out)) == [production.d]
    code, _, err = export(location, "--evaluator", "other", "-o", str(out))
    assert (code, err) == (
        1,
        f"agent-monitor dataset export: no failing results of other in {location}: nothing written\n",
    )


def test_a_pruned_traces_task_comes_from_its_reviews_snapshot(production: Production, tmp_path: Path) -> None:
    production.backend.execute("DELETE FROM results")
    production.backend.execute("DELETE FROM traces")
    out = tmp_path / "kept.json"
    assert export(production.backend.location, "--reviewed", "-o", str(out))[0] == 0
    refund = tasks_of(out)[production.b]
    assert refund["input"] == REFUND and refund["metadata"]["trace_stored"] is False
    assert refund["expected_trajectory"] == [{"tool": "lookup_order"}, {"tool": "refund"}]
    assert refund["constraints"]["max_latency_ms"] == 1500.0 and refund["metadata"]["service"] == "shop"
    assert tasks_of(out)[production.a]["expected_output"] == "Paris"


def test_csv_holds_the_same_tasks(production: Production, tmp_path: Path) -> None:
    assert export(production.backend.location, "--reviewed", "-o", str(tmp_path / "t.json"))[0] == 0
    assert export(production.backend.location, "--reviewed", "-o", str(tmp_path / "t.csv"))[0] == 0
    from_csv = Dataset.from_csv(tmp_path / "t.csv")
    assert from_csv.tasks == Dataset.from_json(tmp_path / "t.json").tasks
    refund = from_csv[production.b]
    assert refund.expected_trajectory == [TrajectoryStep(tool="lookup_order"), TrajectoryStep(tool="refund")]
    assert isinstance(refund.constraints, Constraints) and refund.constraints.max_latency_ms == 1500.0


# --- errors --------------------------------------------------------------------------------------


def test_an_unreadable_store_a_bad_time_or_output_and_an_unknown_signature_are_refused(
    production: Production, tmp_path: Path
) -> None:
    out = tmp_path / "t.json"
    missing = tmp_path / "nope.db"
    code, _, err = export(str(missing), "-o", str(out))
    assert (code, err) == (1, f"agent-monitor dataset export: {missing}: no such file\n")
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    code, _, err = export(str(junk), "-o", str(out))
    assert (code, err) == (
        1,
        f"agent-monitor dataset export: the result store {junk} cannot be read: file is not a database\n",
    )
    location = production.backend.location
    code, _, err = export(location, "--since", "yesterday", "-o", str(out))
    assert code == 2 and err.startswith("agent-monitor dataset export: --since: invalid time 'yesterday'")
    code, _, err = export(location, "-o", str(tmp_path / "t.yaml"))
    assert (code, err) == (
        2,
        f"agent-monitor dataset export: -o must name a .json or .csv file, got '{tmp_path / 't.yaml'}'\n",
    )
    code, _, err = export(location, "--signature", "0123456789abcdef", "-o", str(out))
    assert (code, err) == (
        1,
        f"agent-monitor dataset export: no failing result with signature '0123456789abcdef' in {location}\n",
    )
    code, _, err = export(location, "-o", str(tmp_path / "no" / "such" / "dir.json"))
    assert code == 1 and err.startswith(
        f"agent-monitor dataset export: cannot write {tmp_path / 'no' / 'such' / 'dir.json'}"
    )
    assert not out.exists()
