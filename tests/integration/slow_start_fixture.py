"""An evaluator whose module takes long to import in an evaluation worker process (not in the daemon's own
process): a window in which the daemon is starting its workers, for the start-up signal test."""

from __future__ import annotations

import multiprocessing
import time

from evaluators import EvalResult, Trace, evaluator

WORKER_IMPORT_SECONDS = 20.0

if multiprocessing.parent_process() is not None:  # a spawned worker
    time.sleep(WORKER_IMPORT_SECONDS)


@evaluator("slow_start")
def slow_start(trace: Trace) -> EvalResult:
    """Always passes."""
    return EvalResult(1.0)
