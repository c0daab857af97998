"""A worker's batch, as the worker process runs it (worker_process.evaluate_batch), in this process."""

from __future__ import annotations

import gc
import threading
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
from monitor.store.sqlite import ResultStore
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


@pytest.mark.parametrize("later", [False, True])
def test_a_batch_whose_traces_get_results_later_is_written_before_it_returns(tmp_path, later: bool) -> None:
    """A worker's write waits for the batch before's rows only; for a batch with an LLM or pairwise judgement to
    come, for its own, so that the verdict, appended to the trace's row by the main process, finds it. The
    writer thread is held up (the store's lock taken) while the worker writes."""
    built, problems = build_evaluators(MonitorConfig().evaluator_entries())
    assert not problems
    outcomes = TraceEvaluator(built, store_results="all").evaluate_batch(synthetic_traces(3))
    if later:
        outcomes[1] = outcomes[1]._replace(pair_keys=(("input", "what is the weather"),))
    ids = [o.trace_id for o in outcomes]
    store = ResultStore(str(tmp_path / "results.db"))
    store.start_writer()
    try:
        store._lock.acquire()  # the writer thread cannot write until it is released
        released = threading.Event()

        def release() -> None:
            released.set()
            store._lock.release()

        if later:  # released soon, well within the worker's WRITE_WAIT_SECONDS
            threading.Timer(0.3, release).start()
        worker_process.BatchWriter(store)(outcomes)
        returned_after_release = released.is_set()
        waited_in_vain = store._queue._behind  # a wait given up: the rows were not there in time
        if not later:
            release()  # the call returned with the rows unwritten, the lock still held
        assert not waited_in_vain and returned_after_release == later
        if later:
            assert store.stored_trace_ids(ids) == set(ids)  # written before the call returned
        assert store.flush() and store.stored_trace_ids(ids) == set(ids)
    finally:
        store.close()
