"""The stage bench (tests/bench/bench_stages.py) on a few traces: every stage and every default evaluator gets a CPU
figure, the table prints them all, and its stage-by-stage worker path builds the outcomes the daemon's
TraceEvaluator builds (so that a change to the evaluation shows here, not as a bench timing another path)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest

from monitor.config import MonitorConfig
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_wire import traces_from_wire
from monitor.outcomes import TraceOutcome
from tests.bench.bench_stages import MAIN_GC, WORKER_GC, handed_off, measure, report
from tests.bench.stage_timing import Cpu, Parts
from tests.bench.stage_worker import evaluate_staged

TRACES = 20


@pytest.fixture(scope="module")
def parts() -> Iterator[Parts]:
    built = Parts()
    try:
        yield built
    finally:
        built.close()


def test_every_stage_and_every_default_evaluator_has_a_figure(parts: Parts) -> None:
    figures = measure(parts, TRACES, repeats=1, warm_up=0, calibrate=False)
    stages = figures.per_trace(figures.stages)
    assert len(stages) > 30
    pauses = (MAIN_GC, WORKER_GC)  # the collector's: none may fall within 20 traces
    assert all(stages[stage] >= 0 for stage in pauses)
    assert {stage: us for stage, us in stages.items() if not us > 0 and stage not in pauses} == {}
    config = MonitorConfig()
    built, _ = build_evaluators(config.evaluator_entries(), config.pricing.overrides())
    labels = {c.label for c in built}
    assert len(labels) > 20
    for book in (figures.per_trace(figures.first), figures.per_trace(figures.again)):
        assert set(book) == labels
        assert {label: us for label, us in book.items() if not us > 0} == {}
    assert figures.batch_run[0] > 0
    printed = "\n".join(report(figures))
    assert all(stage in printed for stage in stages) and all(label in printed for label in labels)


def _timeless(outcome: TraceOutcome) -> TraceOutcome:
    return outcome._replace(results=tuple(row._replace(duration_seconds=0.0) for row in outcome.results))


def test_the_staged_worker_path_builds_what_trace_evaluator_builds(parts: Parts) -> None:
    call = handed_off(parts, TRACES, Cpu(), logged=False)[0]
    staged = evaluate_staged(parts, call, Cpu())
    expected = parts.evaluator.evaluate_batch(traces_from_wire(pickle.loads(call)[1][0]))
    assert len(staged.outcomes) == TRACES
    assert [_timeless(o) for o in staged.outcomes] == [_timeless(o) for o in expected]  # type: ignore[arg-type]
