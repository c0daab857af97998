"""Readings of a process and all its descendants from /proc: CPU time per process and summed RSS.

The daemon's evaluation workers (and multiprocessing's resource tracker) are its children and may be
replaced while it runs, so `TreeSampler` walks the tree once per interval and keeps the last CPU time seen
for every process (keyed by pid and start time, so a reused pid is a new process). CPU used between two
`mark()`s is the sum over processes of (last seen - seen at the first mark, or 0 when born after it).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024

ProcessKey = tuple[int, int]  # (pid, start time in clock ticks since boot)


def children(pid: int) -> list[int]:
    """Direct children of `pid`: the union over its threads' /proc/<pid>/task/<tid>/children."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


def tree(root: int) -> list[int]:
    """`root` and every descendant still alive, parents first."""
    pids, seen = [root], {root}
    for pid in pids:  # grows while iterating: breadth-first
        for child in children(pid):
            if child not in seen:
                seen.add(child)
                pids.append(child)
    return pids


def stat(pid: int) -> tuple[ProcessKey, float, int] | None:
    """(key, user + system CPU seconds, RSS in KiB) of a process; None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # fields[0] is field 3 (state): utime 14, stime 15, starttime 22, rss (pages) 24.
    return (pid, int(fields[19])), (int(fields[11]) + int(fields[12])) / CLK_TCK, int(fields[21]) * PAGE_KIB


def proc_kib(pid: int, field_name: str) -> int:
    """A `VmRSS`/`VmHWM`-style field of /proc/<pid>/status, in KiB (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (0 when gone)."""
    reading = stat(pid)
    return reading[1] if reading else 0.0


@dataclass
class Mark:
    """The tree at one instant: when, and the last CPU time seen of every process so far."""

    at: float
    cpu: dict[ProcessKey, float] = field(default_factory=dict)

    def cpu_since(self, earlier: Mark) -> float:
        """CPU seconds the tree used between `earlier` and this mark."""
        return sum(max(0.0, seconds - earlier.cpu.get(key, 0.0)) for key, seconds in self.cpu.items())


class TreeSampler(threading.Thread):
    """Samples the tree under `root` every `interval` s until stopped: CPU per process, summed RSS."""

    def __init__(self, root: int, interval: float = 1.0, max_samples: int = 100_000) -> None:
        super().__init__(daemon=True, name="tree-sampler")
        self.root, self.interval, self.max_samples = root, interval, max_samples
        self.cpu: dict[ProcessKey, float] = {}
        self.rss_kib: list[int] = []  # summed RSS of the tree, one entry per sample
        self.processes_seen: set[ProcessKey] = set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._recording_rss = False

    def sample(self) -> int:
        """Read the tree now; returns its summed RSS in KiB."""
        rss = 0
        with self._lock:
            for pid in tree(self.root):
                reading = stat(pid)
                if reading is None:
                    continue
                key, seconds, kib = reading
                self.cpu[key] = seconds
                self.processes_seen.add(key)
                rss += kib
            if self._recording_rss:
                self.rss_kib.append(rss)
        return rss

    def mark(self) -> Mark:
        """Sample now and return the CPU times seen so far (compare two marks with `Mark.cpu_since`)."""
        self.sample()
        with self._lock:
            return Mark(time.monotonic(), dict(self.cpu))

    def record_rss(self, on: bool) -> None:
        """Start/stop keeping each sample's RSS in `rss_kib`."""
        with self._lock:
            self._recording_rss = on

    def run(self) -> None:
        for _ in range(self.max_samples):
            if self._done.wait(self.interval):
                return
            self.sample()

    def stop(self) -> None:
        self._done.set()
        if self.ident is not None:
            self.join(timeout=5)
