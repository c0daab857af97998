"""Exact windowed aggregates: bounded per-window sample stores and their statistics."""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice, repeat

Key = tuple[str, str, str]  # (evaluator, service, variant)


@dataclass(frozen=True, slots=True)
class WindowSnapshot:
    """The results inside one window of one (evaluator, service, variant), or several merged, at one moment."""

    passed: int
    verdicts: int  # results with a pass/fail verdict
    scores: tuple[float, ...]  # in arrival order; with `ordered`, each window's ascending (merged: one run each)

    @property
    def pass_ratio(self) -> float | None:
        return self.passed / self.verdicts if self.verdicts else None

    @staticmethod
    def merge(snapshots: Iterable[WindowSnapshot]) -> WindowSnapshot:
        """The snapshots' results together (e.g. every service, or every variant, of an evaluator)."""
        snapshots = list(snapshots)
        if len(snapshots) == 1:
            return snapshots[0]
        passed = verdicts = 0
        scores: list[float] = []
        for snapshot in snapshots:
            passed += snapshot.passed
            verdicts += snapshot.verdicts
            scores.extend(snapshot.scores)
        return WindowSnapshot(passed, verdicts, tuple(scores))


Mark = tuple[int, int]  # a window's rows appended so far and rows held: where a reader left it


@dataclass(frozen=True, slots=True)
class WindowRows:
    """One window at one moment, for a reader that follows its changes: the rows `appended` so far and `held`
    (the last ones: rows leave in arrival order), the scores ascending (NaN left out), the pass and verdict
    counts, and the scores that entered and left since the reader's mark `since` (NaN for none), when the
    window can still tell."""

    passed: int
    verdicts: int
    appended: int
    held: int
    ordered: tuple[float, ...]
    missing: int  # rows held without a score
    since: Mark | None = None
    added: tuple[float, ...] | None = None  # None: not asked (since None) or no longer known
    dropped: tuple[float, ...] | None = None

    @property
    def changes(self) -> int:
        """Rows appended and dropped so far: equal counts, equal rows."""
        return 2 * self.appended - self.held

    @property
    def mark(self) -> Mark:
        return self.appended, self.held

    def snapshot(self) -> WindowSnapshot:
        """The window as an ordered snapshot."""
        return WindowSnapshot(self.passed, self.verdicts, self.ordered)


EMPTY_ROWS = WindowRows(0, 0, 0, 0, (), 0)


class _Window:
    """One window's samples in columns (timestamps, scores as floats with NaN for none, verdicts) and running
    counts."""

    __slots__ = (
        "appended", "judged", "missing_scores", "ordered", "ordered_appended", "ordered_at", "ordered_rows",
        "passed", "popped", "scores", "stamps", "verdicts",
    )  # fmt: skip

    def __init__(self, log: int) -> None:
        self.stamps: deque[float] = deque()
        self.scores: deque[float] = deque()
        self.verdicts: deque[bool | None] = deque()
        self.passed = 0
        self.judged = 0
        self.missing_scores = 0
        self.appended = 0  # samples appended so far (those dropped: appended - len(stamps))
        # The last `log` scores popped (newest last): what left since a sorted copy was made (this window's
        # own, or a reader's), to patch it with rather than sort every score again.
        self.popped: deque[float] = deque(maxlen=log)
        # The scores ascending as they were at `ordered_at` changes, when `ordered_appended` rows had been
        # appended and the window held `ordered_rows`.
        self.ordered: tuple[float, ...] = ()
        self.ordered_at = -1
        self.ordered_appended = 0
        self.ordered_rows = 0

    def extend(self, now: float, scores: list[float], verdicts: list[bool | None], missing: int, cap: int) -> None:
        """Samples at `now`: their scores as floats (NaN for none: `missing` of them), their verdicts; the oldest
        dropped past `cap` (what appending them one by one at the cap would have dropped, in the same order)."""
        count = len(scores)
        self.stamps.extend(repeat(now, count))
        self.scores.extend(scores)
        self.verdicts.extend(verdicts)
        self.passed += verdicts.count(True)
        self.judged += count - verdicts.count(None)
        self.missing_scores += missing
        self.appended += count
        for _ in range(len(self.stamps) - cap):
            self.pop()

    def pop(self) -> None:
        self.stamps.popleft()
        score = self.scores.popleft()
        passed = self.verdicts.popleft()
        self.passed -= passed is True
        self.judged -= passed is not None
        self.missing_scores -= score != score
        self.popped.append(score)

    @property
    def changes(self) -> int:
        """Samples appended and dropped so far: equal counts, equal contents (rows leave in arrival order)."""
        return 2 * self.appended - len(self.stamps)

    def evict(self, cutoff: float) -> None:
        """Drop samples at or before `cutoff` (samples are appended in clock order)."""
        stamps = self.stamps
        while stamps and stamps[0] <= cutoff:
            self.pop()

    def snapshot(self, cutoff: float | None, ordered: bool = False) -> WindowSnapshot:
        """The samples; with `cutoff`, rows at or before it are filtered out wherever they sit (clock steps).
        `ordered`: the scores ascending as floats, sorted once per change of the window (kept until then)."""
        if cutoff is not None:
            rows = [(s, v) for t, s, v in zip(self.stamps, self.scores, self.verdicts, strict=True) if t > cutoff]
            verdicts = [v for _, v in rows if v is not None]
            kept = [s for s, _ in rows if s == s]
            return WindowSnapshot(sum(verdicts), len(verdicts), tuple(sorted(kept) if ordered else kept))
        if ordered:
            return WindowSnapshot(self.passed, self.judged, self.ordered_scores())
        return WindowSnapshot(self.passed, self.judged, tuple(self._scores()))

    def ordered_scores(self) -> tuple[float, ...]:
        """The scores ascending (NaN left out), sorted once per change of the window (kept until then)."""
        if self.ordered_at != self.changes:
            self._sort()
        return self.ordered

    def rows(self, since: Mark | None) -> WindowRows:
        """The window as rows, with the scores that entered and left since the mark `since` when known."""
        ordered = self.ordered_scores()
        held = len(self.scores)
        changes = self.since(*since) if since is not None else None
        added, dropped = changes if changes is not None else (None, None)
        return WindowRows(self.passed, self.judged, self.appended, held, ordered, self.missing_scores, since,
                          added, dropped)  # fmt: skip

    def since(self, appended: int, held: int) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """(scores appended, scores popped) since the window had `appended` rows appended and held `held`, NaN
        included; None when that is not known: more popped than the log keeps, or every row replaced."""
        added = self.appended - appended
        dropped = (self.appended - len(self.scores)) - (appended - held)
        if added < 0 or dropped < 0 or added > len(self.scores) or dropped > len(self.popped):
            return None
        return tuple(islice(reversed(self.scores), added)), tuple(islice(reversed(self.popped), dropped))

    def _sort(self) -> None:
        """Bring `ordered` up to date: the scores dropped since taken out by binary search and the new ones
        merged in (a sort of one long run and a short tail), or every score sorted when much has changed."""
        rows = len(self.scores)
        changes = self.since(self.ordered_appended, self.ordered_rows)
        if changes is not None and len(changes[1]) <= self.ordered_rows // 8:  # (past that, sorting is cheaper)
            added, dropped = changes
            values = list(self.ordered)
            for score in dropped:
                if score == score:
                    del values[bisect_left(values, score)]
            values.extend(s for s in added if s == s)
            values.sort()
        else:
            values = sorted(self._scores())
        self.ordered, self.ordered_at, self.ordered_appended, self.ordered_rows = (
            tuple(values), self.changes, self.appended, rows
        )  # fmt: skip

    def _scores(self) -> Iterable[float]:
        return self.scores if not self.missing_scores else (s for s in self.scores if s == s)


def _by_key(samples: Iterable[tuple[Key, float | None, bool | None]]) -> dict[Key, _Samples]:
    """The samples of each key, in order: their scores as floats (NaN for none: an evaluator may score with an
    int or a bool, rank tests take floats), their verdicts, how many have no score."""
    found: dict[Key, _Samples] = {}
    for key, score, passed in samples:
        entry = found.get(key)
        if entry is None:
            entry = found[key] = _Samples([], [])
        if score is None:
            entry.scores.append(math.nan)
            entry.missing += 1
        else:
            entry.scores.append(score if type(score) is float else float(score))
        entry.verdicts.append(passed)
    return found


@dataclass(slots=True)
class _Samples:
    scores: list[float]
    verdicts: list[bool | None]
    missing: int = 0


class WindowStore:
    """Scored results per (evaluator, service, variant) and window length, each window capped at `sample_cap`.

    When a window is full the oldest sample is dropped; samples older than the window are evicted on every
    append and read. `extra_windows(evaluator)` lists window lengths needed beyond the exported ones (alert
    windows). Windows keep running pass and verdict counts, and their scores sorted as of the last ordered read
    (patched with what entered and left since, or sorted again when much has), so a scrape costs at most a copy
    and a sort of the scores, not a Python loop over every sample; `generations` tells whether windows changed,
    and `rows` what entered and left them since a reader's mark (a bounded log of the scores popped).
    Thread-safe: writers run on the event loop or a worker thread, readers at scrape time.
    """

    def __init__(
        self,
        window_seconds: Iterable[float],
        sample_cap: int,
        clock: Callable[[], float],
        extra_windows: Callable[[str], Iterable[float]] | None = None,
    ) -> None:
        if sample_cap < 1:
            raise ValueError(f"window_sample_cap must be at least 1, got {sample_cap}")
        self._windows = tuple(sorted({float(s) for s in window_seconds}))
        for seconds in self._windows:
            if seconds <= 0:
                raise ValueError(f"window length must be positive, got {seconds}")
        self.sample_cap = sample_cap
        self._clock = clock
        self._extra = extra_windows
        self._data: dict[Key, dict[float, _Window]] = {}
        self._lock = threading.Lock()
        self._latest = -math.inf  # the latest timestamp recorded
        self._clock_stepped_back = False

    def _lengths(self, evaluator: str) -> tuple[float, ...]:
        if self._extra is None:
            return self._windows
        return tuple(sorted(set(self._windows) | {float(s) for s in self._extra(evaluator) if s > 0}))

    def add(self, evaluator: str, service: str, score: float | None, passed: bool | None, variant: str = "") -> None:
        """Record one scored result now."""
        self.add_many([((evaluator, service, variant), score, passed)])

    def add_many(self, samples: Iterable[tuple[Key, float | None, bool | None]]) -> None:
        """Record several scored results now, under one lock: ((evaluator, service, variant), score, passed)."""
        now = self._clock()
        cap = self.sample_cap
        log = cap // 8 + 16  # scores popped kept to patch sorted copies with (theirs and readers')
        with self._lock:
            if now < self._latest:
                self._clock_stepped_back = True  # rows may now be out of time order: snapshots filter them
            self._latest = max(self._latest, now)
            for key, new in _by_key(samples).items():
                windows = self._data.get(key)
                if windows is None:
                    windows = self._data[key] = {s: _Window(log) for s in self._lengths(key[0])}
                for seconds, window in windows.items():
                    window.evict(now - seconds)
                    window.extend(now, new.scores, new.verdicts, new.missing, cap)

    def keys(self) -> list[Key]:
        """Every (evaluator, service, variant) that has ever recorded a result."""
        with self._lock:
            return list(self._data)

    def snapshot(
        self, evaluator: str, service: str, seconds: float, variant: str = "", ordered: bool = False
    ) -> WindowSnapshot:
        """The results of the last `seconds` (must be an exported or extra window length); `ordered`: the scores
        ascending as floats (sorted once per change of the window, for quantiles and rank tests)."""
        now = self._clock()
        with self._lock:
            window = self._data.get((evaluator, service, variant), {}).get(float(seconds))
            if window is None:
                return WindowSnapshot(0, 0, ())
            cutoff = now - seconds
            window.evict(cutoff)
            return window.snapshot(cutoff if self._clock_stepped_back else None, ordered)

    def generations(self, keys: Iterable[Key], seconds: float) -> tuple[int, ...] | None:
        """A stamp of the windows of `keys` over the last `seconds`: equal stamps, equal `merged` contents (the
        windows' change counts, after evicting what has left them). None when no stamp can tell: since the
        clock stepped back, snapshots filter rows by time without evicting them."""
        now = self._clock()
        with self._lock:
            if self._clock_stepped_back:
                return None
            stamp = []
            for key in keys:
                window = self._data.get(key, {}).get(float(seconds))
                if window is None:
                    stamp.append(-1)
                    continue
                window.evict(now - seconds)
                stamp.append(window.changes)
            return tuple(stamp)

    def rows(self, keys: Sequence[Key], seconds: float, since: Sequence[Mark] | None = None) -> list[WindowRows] | None:
        """The windows of `keys` over the last `seconds` as rows (read under one lock), for a reader that
        follows their changes: with `since` (a mark per key, from the reader's last rows), each with the scores
        that entered and left since, when still known (see WindowRows). None since the clock stepped back
        (rows are then filtered by time, not evicted, so they no longer leave in arrival order)."""
        now = self._clock()
        marks: Sequence[Mark | None] = since if since is not None else [None] * len(keys)
        with self._lock:
            if self._clock_stepped_back:
                return None
            rows = []
            for key, mark in zip(keys, marks, strict=True):
                window = self._data.get(key, {}).get(float(seconds))
                if window is None:
                    rows.append(EMPTY_ROWS)
                    continue
                window.evict(now - seconds)
                rows.append(window.rows(mark))
            return rows

    def merged(self, keys: Iterable[Key], seconds: float, ordered: bool = False) -> WindowSnapshot:
        """The results of the last `seconds` of every key in `keys`, together; `ordered`: each key's scores
        ascending, one after the other (runs a sort merges in linear time)."""
        return WindowSnapshot.merge(self.snapshot(e, s, seconds, v, ordered) for e, s, v in keys)

    def counts(self, keys: Iterable[Key], seconds: float) -> WindowSnapshot:
        """The pass and verdict counts of the last `seconds` of every key in `keys`, together, without their scores
        (what an alert rule reads: no copy of a window)."""
        now = self._clock()
        passed = verdicts = 0
        with self._lock:
            cutoff = now - seconds
            for key in keys:
                window = self._data.get(key, {}).get(float(seconds))
                if window is None:
                    continue
                window.evict(cutoff)
                if self._clock_stepped_back:  # rows may be out of time order: filtered by time
                    kept = window.snapshot(cutoff)
                    passed, verdicts = passed + kept.passed, verdicts + kept.verdicts
                else:
                    passed, verdicts = passed + window.passed, verdicts + window.judged
        return WindowSnapshot(passed, verdicts, ())

    def sample_count(self, evaluator: str, service: str, seconds: float, variant: str = "") -> int:
        """How many samples the window currently holds, expired ones included until the next eviction."""
        with self._lock:
            window = self._data.get((evaluator, service, variant), {}).get(float(seconds))
            return len(window.stamps) if window is not None else 0
