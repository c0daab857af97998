"""A worker's batch, as the worker process runs it (worker_process.evaluate_batch), in this process."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from monitor.config import MonitorConfig
from monitor.engine import worker_process
from monitor.engine.batch_run import BatchRun
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.gc_tuning import YOUNG_THRESHOLD
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.engine.trace_wire import traces_to_wire
from monitor.metrics.tally import MetricsTally
from tests.support.completed_traces import synthetic_traces


@pytest.fixture
def worker() -> Iterator[None]:
    """The worker's module state with the default evaluators and no store, and its collector's thresholds."""
    built, problems = build_evaluators(MonitorConfig().evaluator_entries())
    assert not problems
    saved, thresholds = worker_process._run, gc.get_threshold()
    worker_process._run = BatchRun(TraceEvaluator(built))
    gc.set_threshold(YOUNG_THRESHOLD, 20, 100)
    try:
        yield
    finally:
        worker_process._run = saved
        gc.set_threshold(*thresholds)


def test_a_batch_leaves_the_young_generation_collected(worker: None) -> None:
    """The collector walks the young generation after the batch, when it holds least, not mid-batch with the
    whole batch in hand (gc_tuning.collect_young): after a batch its count starts again from nothing."""
    wire = traces_to_wire(synthetic_traces(64))
    gc.collect()
    result = worker_process.evaluate_batch(wire)
    assert MetricsTally.from_wire(result.tally).evaluated == 64 and result.seconds > 0
    assert gc.get_count()[0] < 100  # else what the batch allocated since a collection fell mid-batch (400 here)
