"""The store's per-window aggregates, read once per time bucket and summed in memory, so that a report reads only
the buckets it has not read before (the minute that just ended, a same-hours bucket of each previous day) instead
of every window's rows again.

A bucket is [start, start + size), `start` a multiple of `size`; it is read when it has ended (the report time is
already `settle` seconds behind the clock, so its traces are stored) and kept while a window still needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from monitor.store.signal_rows import (
    ResultAggregate,
    SessionAggregate,
    ToolAggregate,
    TraceAggregate,
    VariantCount,
    WindowAggregates,
)

ReadWindow = Callable[[float, float], WindowAggregates]
Row = TypeVar("Row", bound=NamedTuple)

# How many leading fields of each aggregate row are its key (strings); the others are summed.
_KEYS: dict[type, int] = {TraceAggregate: 2, ToolAggregate: 3, ResultAggregate: 3, SessionAggregate: 2, VariantCount: 3}
EMPTY = WindowAggregates([], [], [], [], [])


def _summed(kind: type[Any], groups: Iterable[Sequence[Any]]) -> list[Any]:
    width = _KEYS[kind]
    totals: dict[tuple, list[float]] = {}
    for rows in groups:
        for row in rows:
            key = row[:width]
            found = totals.get(key)
            if found is None:
                totals[key] = list(row[width:])
            else:
                for i, value in enumerate(row[width:]):
                    found[i] += value
    return [kind(*key, *values) for key, values in totals.items()]


def merged(windows: Sequence[WindowAggregates]) -> WindowAggregates:
    """The aggregates of the union of disjoint windows: each row summed by its key."""
    if not windows:
        return EMPTY
    if len(windows) == 1:
        return windows[0]
    kinds = (TraceAggregate, ToolAggregate, ResultAggregate, SessionAggregate, VariantCount)
    return WindowAggregates(*(_summed(kind, [w[i] for w in windows]) for i, kind in enumerate(kinds)))


def bucket_starts(since: float, until: float, size: float) -> list[float]:
    """The buckets of `size` that tile [since, until), both ends rounded down to a bucket boundary."""
    first, last = int(since // size), int(until // size)
    return [i * size for i in range(first, last)]


class BucketCache:
    """Buckets of one size read through `read` and kept until a call no longer needs them."""

    def __init__(self, read: ReadWindow, size: float) -> None:
        self._read = read
        self.size = size
        self._buckets: dict[float, WindowAggregates] = {}
        self._sums: dict[tuple[float, ...], WindowAggregates] = {}
        self.reads = 0  # buckets read from the store so far

    def windows(self, ranges: Sequence[tuple[float, float]]) -> WindowAggregates:
        """The summed aggregates of `ranges` (each rounded to buckets); buckets no range needs are forgotten."""
        starts = tuple(s for since, until in ranges for s in bucket_starts(since, until, self.size))
        total = self._sums.get(starts)
        if total is not None:
            return total
        for start in starts:
            if start not in self._buckets:
                self._buckets[start] = self._read(start, start + self.size)
                self.reads += 1
        needed = set(starts)
        for start in [s for s in self._buckets if s not in needed]:
            del self._buckets[start]
        total = merged([self._buckets[s] for s in starts])
        self._sums = {starts: total}
        return total

    def forget(self) -> None:
        """Drop everything (a read failed: the next report reads its buckets again)."""
        self._buckets.clear()
        self._sums.clear()


__all__ = ["EMPTY", "BucketCache", "ReadWindow", "bucket_starts", "merged"]
