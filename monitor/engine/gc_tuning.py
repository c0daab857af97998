"""Garbage-collector settings for a process that handles many short-lived objects per trace."""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000


def tune_gc() -> None:
    """Move what start-up allocated out of the collector's sight and collect the young generation less often.

    Each trace allocates thousands of short-lived objects (records, views, parsed JSON); with the default
    threshold (700) the collector runs many times per trace and re-walks every long-lived object of the
    older generations (the traces held by the assembler). Reference counting still frees almost everything
    at once; the collector is only needed for cycles.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, 20, 100)
