"""Exact windowed aggregates: bounded per-window sample stores and their statistics."""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

QUANTILES: tuple[float, ...] = (0.05, 0.5, 0.95, 0.99)

# One scored result: (timestamp, score or None, passed or None).
Sample = tuple[float, float | None, bool | None]
Key = tuple[str, str]  # (evaluator, service)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of ascending values by linear interpolation (numpy's default method)."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


@dataclass(frozen=True, slots=True)
class ScoreStats:
    """Mean, population standard deviation (numpy's default, ddof=0) and quantiles of a set of scores."""

    count: int
    mean: float
    stddev: float
    quantiles: dict[float, float]


def score_stats(scores: Iterable[float], quantiles: Sequence[float] = QUANTILES) -> ScoreStats | None:
    """Exact statistics of `scores`; None when there are none."""
    values = sorted(scores)
    if not values:
        return None
    n = len(values)
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / n
    return ScoreStats(n, mean, math.sqrt(variance), {q: percentile(values, q) for q in quantiles})


@dataclass(frozen=True, slots=True)
class WindowSnapshot:
    """The results inside one window of one (evaluator, service) at one moment."""

    passed: int
    verdicts: int  # results with a pass/fail verdict
    scores: tuple[float, ...]

    @property
    def pass_ratio(self) -> float | None:
        return self.passed / self.verdicts if self.verdicts else None


class WindowStore:
    """Scored results per (evaluator, service) and window length, each window capped at `sample_cap`.

    When a window is full the oldest sample is dropped; samples older than the window are evicted on every
    append and read. `extra_windows(evaluator)` lists window lengths needed beyond the exported ones (alert
    windows). Thread-safe: writers run on worker threads, readers at scrape time.
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
        self._data: dict[Key, dict[float, deque[Sample]]] = {}
        self._lock = threading.Lock()

    def _lengths(self, evaluator: str) -> tuple[float, ...]:
        if self._extra is None:
            return self._windows
        return tuple(sorted(set(self._windows) | {float(s) for s in self._extra(evaluator) if s > 0}))

    def add(self, evaluator: str, service: str, score: float | None, passed: bool | None) -> None:
        """Record one scored result now."""
        now = self._clock()
        key = (evaluator, service)
        with self._lock:
            windows = self._data.get(key)
            if windows is None:
                windows = {s: deque(maxlen=self.sample_cap) for s in self._lengths(evaluator)}
                self._data[key] = windows
            for seconds, samples in windows.items():
                _evict(samples, now - seconds)
                samples.append((now, score, passed))

    def add_many(self, samples: Iterable[tuple[Key, float | None, bool | None]]) -> None:
        """Record several scored results now, under one lock: ((evaluator, service), score, passed) each."""
        now = self._clock()
        with self._lock:
            for key, score, passed in samples:
                windows = self._data.get(key)
                if windows is None:
                    windows = {s: deque(maxlen=self.sample_cap) for s in self._lengths(key[0])}
                    self._data[key] = windows
                for seconds, samples_of in windows.items():
                    _evict(samples_of, now - seconds)
                    samples_of.append((now, score, passed))

    def keys(self) -> list[Key]:
        """Every (evaluator, service) that has ever recorded a result."""
        with self._lock:
            return list(self._data)

    def snapshot(self, evaluator: str, service: str, seconds: float) -> WindowSnapshot:
        """The results of the last `seconds` (must be an exported or extra window length)."""
        now = self._clock()
        with self._lock:
            samples = self._data.get((evaluator, service), {}).get(float(seconds))
            if samples is None:
                return WindowSnapshot(0, 0, ())
            cutoff = now - seconds
            _evict(samples, cutoff)
            rows = [row for row in samples if row[0] > cutoff]  # also drops rows stamped before a clock step back
        verdicts = [p for _, _, p in rows if p is not None]
        scores = tuple(s for _, s, _ in rows if s is not None)
        return WindowSnapshot(sum(verdicts), len(verdicts), scores)

    def sample_count(self, evaluator: str, service: str, seconds: float) -> int:
        """How many samples the window currently holds, expired ones included until the next eviction."""
        with self._lock:
            return len(self._data.get((evaluator, service), {}).get(float(seconds), ()))


def _evict(samples: deque[Sample], cutoff: float) -> None:
    """Drop samples at or before `cutoff` (samples are appended in clock order)."""
    while samples and samples[0][0] <= cutoff:
        samples.popleft()
