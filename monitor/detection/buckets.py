"""The store's per-window aggregates, read once per time bucket and summed in memory, so that a report reads only
the buckets it has not read before (the interval that just ended, a same-hours bucket of each previous day, the
latter kept in the store) instead of every window's rows again.

A bucket is [start, start + size), `start` a multiple of `size`; it is read when it has ended (the report time is
already `settle` seconds behind the clock, so its traces are stored) and kept while a window still needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from monitor.store.signal_rows import (
    ResultAggregate,
    SessionAggregate,
    ToolAggregate,
    TraceAggregate,
    VariantCount,
    WindowAggregates,
)

ReadWindow = Callable[[float, float], WindowAggregates]

# How many leading fields of each aggregate row are its key (strings); the others are summed.
_KEYS: dict[type, int] = {TraceAggregate: 2, ToolAggregate: 3, ResultAggregate: 3, SessionAggregate: 2, VariantCount: 3}
EMPTY = WindowAggregates([], [], [], [], [])
_KINDS = (TraceAggregate, ToolAggregate, ResultAggregate, SessionAggregate, VariantCount)


class RunningTotal:
    """The sum of a set of buckets that slides from one report to the next: the buckets that left the set are
    subtracted and those that joined it added, instead of summing every bucket again. Counts stay exact (integers);
    the float sums are summed afresh every `REBUILD_AFTER` updates, so rounding cannot build up."""

    REBUILD_AFTER = 288

    def __init__(self) -> None:
        self._members: dict[float, WindowAggregates] = {}
        self._sums: list[dict[tuple, list[float]]] = [{} for _ in _KINDS]
        self._updates = 0

    def update(self, buckets: dict[float, WindowAggregates], starts: Sequence[float]) -> WindowAggregates:
        """The total of `buckets[s]` for `starts`."""
        new = set(starts)
        added = new - self._members.keys()
        removed = self._members.keys() - new
        self._updates += 1
        if self._updates > self.REBUILD_AFTER or len(added) + len(removed) >= len(new):
            self._members, self._sums, self._updates = {}, [{} for _ in _KINDS], 0
            added, removed = new, set()
        for start in removed:
            self._apply(self._members.pop(start), -1)
        for start in new - added:  # a bucket read again (kept once old enough, with any row written late)
            if buckets[start] is not self._members[start]:
                self._apply(self._members[start], -1)
                self._members[start] = buckets[start]
                self._apply(buckets[start], 1)
        for start in sorted(added):
            self._members[start] = buckets[start]
            self._apply(buckets[start], 1)
        pairs = zip(_KINDS, self._sums, strict=True)
        return WindowAggregates(*([kind(*key, *values) for key, values in sums.items()] for kind, sums in pairs))

    def _apply(self, aggregates: WindowAggregates, sign: int) -> None:
        groups = cast(Sequence[Sequence[Any]], aggregates)
        for kind, rows, sums in zip(_KINDS, groups, self._sums, strict=True):
            width = _KEYS[kind]
            for row in rows:
                key = row[:width]
                found = sums.get(key)
                if found is None:
                    sums[key] = [sign * value for value in row[width:]]
                    continue
                for i, value in enumerate(row[width:]):
                    found[i] += sign * value
                if sign < 0 and found[0] <= 0:  # its count (every row's first figure) is back to 0: gone
                    del sums[key]


def bucket_starts(since: float, until: float, size: float) -> list[float]:
    """The buckets of `size` that tile [since, until), both ends rounded down to a bucket boundary."""
    first, last = int(since // size), int(until // size)
    return [i * size for i in range(first, last)]


class BucketCache:
    """Buckets of one size, each read once: from memory, else as kept in the store (`stored`), else from the
    traces' rows (`read`), and forgotten from memory when a report no longer needs them. A bucket read from the rows
    is kept (`keep`) once it ended `keep_after` seconds before the report's time: one read sooner is read again then
    (with any row written late, e.g. a write retried), and that copy is kept and replaces it."""

    def __init__(
        self,
        read: ReadWindow,
        size: float,
        *,
        stored: Callable[[float, float], WindowAggregates | None] | None = None,
        keep: Callable[[float, float, WindowAggregates], None] | None = None,
        keep_after: float = 0.0,
    ) -> None:
        self._read = read
        self._stored = stored
        self._keep = keep
        self.size = size
        self.keep_after = keep_after
        self._buckets: dict[float, WindowAggregates] = {}
        self._fresh: set[float] = set()  # buckets read from the rows, not kept yet (too recent)
        self._sums: dict[str, RunningTotal] = {}
        self._as_of = float("inf")
        self.reads = 0  # buckets read from the traces' rows so far

    def load(self, ranges: Sequence[tuple[float, float]], as_of: float = float("inf")) -> None:
        """Have every bucket of `ranges` at hand, and only those, for a report as of `as_of`."""
        self._as_of = as_of
        needed = {s for since, until in ranges for s in bucket_starts(since, until, self.size)}
        for start in [s for s in self._buckets if s not in needed]:
            del self._buckets[start]
            self._fresh.discard(start)
        for start in sorted(self._fresh):
            if self._keepable(start):
                self._fresh.discard(start)
                self._buckets[start] = self._from_rows(start)
        for start in sorted(needed - self._buckets.keys()):
            self._buckets[start] = self._fetch(start)

    def _keepable(self, start: float) -> bool:
        return start + self.size <= self._as_of - self.keep_after

    def _fetch(self, start: float) -> WindowAggregates:
        if self._stored is not None:
            kept = self._stored(start, self.size)
            if kept is not None:
                return kept
        return self._from_rows(start)

    def _from_rows(self, start: float) -> WindowAggregates:
        got = self._read(start, start + self.size)
        self.reads += 1
        if self._keep is None:
            return got
        if self._keepable(start):
            self._keep(start, self.size, got)
        else:
            self._fresh.add(start)
        return got

    def total(self, ranges: Sequence[tuple[float, float]], series: str = "") -> WindowAggregates:
        """The summed aggregates of `ranges` (each rounded to buckets; `load` them first), kept as a running total
        per `series` (a window that slides from report to report: only the buckets that changed are summed)."""
        starts = tuple(s for since, until in ranges for s in bucket_starts(since, until, self.size))
        running = self._sums.get(series)
        if running is None:
            running = self._sums[series] = RunningTotal()
        return running.update(self._buckets, starts)

    def windows(self, ranges: Sequence[tuple[float, float]], as_of: float = float("inf")) -> WindowAggregates:
        """`load(ranges, as_of)`, then their total."""
        self.load(ranges, as_of)
        return self.total(ranges)

    def forget(self) -> None:
        """Drop everything (a read failed: the next report reads its buckets again)."""
        self._buckets.clear()
        self._fresh.clear()
        self._sums.clear()


__all__ = ["EMPTY", "BucketCache", "ReadWindow", "RunningTotal", "bucket_starts"]
