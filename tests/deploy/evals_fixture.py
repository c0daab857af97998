"""Evaluators the dashboard's live test loads by module path, so that every panel has something to show.

`worker_crash_probe` ends the evaluation worker process it runs in (never the daemon itself: only inside a child
process) on traces of the service CRASH_SERVICE, so the daemon counts the trace in
`agent_monitor_traces_dropped_total{reason="worker_crash"}` and replaces the worker
(`agent_monitor_worker_restarts_total`); it skips every other trace. `never_passes` fails every trace: its pass
ratio must read 0, not vanish.
"""

from __future__ import annotations

import multiprocessing
import os

from evaluators import EvalResult, Trace, evaluator

CRASH_SERVICE = "worker-crash-probe"


@evaluator("worker_crash_probe")
def worker_crash_probe(trace: Trace) -> EvalResult:
    """Ends its worker process on the probe service's traces."""
    if trace.service_name == CRASH_SERVICE and multiprocessing.parent_process() is not None:
        os._exit(70)
    return EvalResult.skip("no_data", "not a crash probe trace")


@evaluator("never_passes")
def never_passes(trace: Trace) -> EvalResult:
    """Fails every trace."""
    return EvalResult(0.0, explanation="never passes")
