"""Garbage-collector settings for a process that handles many short-lived objects per trace."""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000
DEFAULT_YOUNG_THRESHOLD = 700  # CPython's own


def tune_gc(collect_less_often: bool = True) -> None:
    """Move what start-up allocated out of the collector's sight and (optionally) collect the young generation
    less often.

    The daemon's main process freezes only: it decodes untrusted requests, and a malformed one leaves reference
    cycles (an exception, its traceback, the frame holding the request's bytes) that only the collector frees;
    collected rarely, a flood of 16 MB malformed exports held over 1 GB (measured by bench_receiver_memory).

    Each trace allocates thousands of short-lived objects (records, views, parsed JSON); with the default
    threshold (700) the collector runs many times per trace and re-walks every long-lived object of the
    older generations (the traces held by the assembler). Reference counting still frees almost everything
    at once; the collector is only needed for cycles.
    """
    gc.collect()
    gc.freeze()
    if collect_less_often:
        gc.set_threshold(YOUNG_THRESHOLD, 20, 100)
        return
    young, *older = gc.get_threshold()
    if young > DEFAULT_YOUNG_THRESHOLD:  # raised earlier in this process (an `evaluate` run in the same interpreter)
        gc.set_threshold(DEFAULT_YOUNG_THRESHOLD, *older)


def collect_young() -> None:
    """Collect the young generation now: an evaluation worker calls it after each batch, when what it holds is
    least. Left to the threshold, a collection falls mid-batch and walks the whole batch in hand (its records,
    views and outcomes: 8-10 ms each, 50-60 µs per trace on the bench's traces, quiet host); after the batch it
    walks what survives it, and the count it resets keeps the next one from falling mid-batch. Since the worker
    releases each trace (`Trace.release`), nothing of a batch is left for it but what the store still queues:
    0.8 ms a batch of 64, against 8 ms while the traces' cycles waited for it. The older generations are
    collected by their thresholds as before."""
    gc.collect(0)
