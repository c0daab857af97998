"""SegmentWriter: the intake log's writer thread. It appends records to segment files and syncs them as the policy
says, then reports which writes are durable (the loop answers those requests); `batch` is group commit: every
write queued while the thread waits for the next sync (at most one per `sync_interval`) shares one fsync. Released
segments are deleted by a second thread, after `barrier()` (the result store has written what it was handed), so
a slow store never holds up the writes."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.intake.records import SEGMENT_MAGIC, Record, encode, segment_name


@dataclass(slots=True)
class Write:
    segment: int
    record: Record  # framed (its CRC computed) on the writer thread, off the event loop
    size: int  # its framed size (`framed_size`)
    token: Any  # handed back in the report


# (written and synced, failed, the error of the failures, seconds the sync took or None)
Report = Callable[[list[Write], list[Write], OSError | None, float | None], None]


class SegmentWriter:
    def __init__(
        self,
        directory: Path,
        sync: str,
        sync_interval: float,
        report: Report,
        *,
        barrier: Callable[[], None] = lambda: None,
        on_released: Callable[[int], None] = lambda segment: None,
        write: Callable[[int, bytes | memoryview], int] = os.write,
        fsync: Callable[[int], None] = os.fsync,
    ) -> None:
        """`report` is called on the writer thread; `write`/`fsync`: os.write/os.fsync (tests inject failures)."""
        self.directory = directory
        self.sync = sync
        self.sync_interval = sync_interval
        self._report = report
        self._barrier = barrier
        self._on_released = on_released
        self._write = write
        self._fsync = fsync
        self._queue: queue.Queue[Write | None] = queue.Queue()
        self._releases: queue.Queue[int | None] = queue.Queue()
        self._fd: int | None = None
        self._segment = -1
        self._offset = 0
        self._last_sync = 0.0
        self._threads: list[threading.Thread] = []
        self._stop_seen = False

    def start(self) -> None:
        if not self._threads:
            self._threads = [
                threading.Thread(target=self._loop, name="intake-log", daemon=True),
                threading.Thread(target=self._release_loop, name="intake-log-release", daemon=True),
            ]
            for thread in self._threads:
                thread.start()

    def put(self, write: Write) -> None:
        self._queue.put(write)

    def release(self, segment: int) -> None:
        self._releases.put(segment)

    def stop(self, timeout: float = 5.0) -> None:
        """Write and sync what is queued, delete what was released, stop both threads."""
        threads, self._threads = self._threads, []
        if not threads:
            return
        self._queue.put(None)
        self._releases.put(None)
        for thread in threads:
            thread.join(timeout)

    # --- the writer thread ----------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                break
            if not self._batch(first):
                break
        self._close()

    def _batch(self, first: Write) -> bool:
        """Write `first` and what else is queued (one write call per segment: the thread takes the GIL back as
        few times as it can while the event loop is busy), waiting for more until the next sync is due; sync;
        report. False once told to stop."""
        written: list[Write] = []
        failed: list[Write] = []
        error: OSError | None = None
        items = self._drain([first])
        while True:
            for group in _by_segment(items):
                problem = self._append(group)
                (failed if problem else written).extend(group)
                error = problem or error
            due = self._last_sync + self.sync_interval - time.monotonic()
            if self.sync != "batch" or self._stop_seen or due <= 0:
                break
            item = self._next(due)
            if item is None:
                break
            items = self._drain([item])
        seconds = None
        if written and self.sync != "none" and self._fd is not None:
            started = time.monotonic()
            try:
                self._fsync(self._fd)
            except OSError as exc:
                failed, written, error = failed + written, [], exc
            self._last_sync = time.monotonic()
            seconds = self._last_sync - started
        self._report(written, failed, error, seconds)
        return not self._stop_seen

    def _drain(self, items: list[Write]) -> list[Write]:
        """`items` and every write queued now."""
        while (item := self._next(0.0)) is not None:
            items.append(item)
        return items

    def _next(self, timeout: float) -> Write | None:
        """The next queued write within `timeout` (None: none, or told to stop: `_stop_seen`)."""
        try:
            item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is None:
            self._stop_seen = True
        return item

    def _append(self, group: list[Write]) -> OSError | None:
        """Write records of one segment at its end, in one call; on a failure, cut the file back to before them."""
        try:
            fd = self._open(group[0].segment)
        except OSError as exc:
            return exc
        data = b"".join(encode(item.record) for item in group)
        try:
            view = memoryview(data)
            while view:
                view = view[self._write(fd, view) :]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._offset)
                os.lseek(fd, self._offset, os.SEEK_SET)
            return exc
        self._offset += len(data)
        return None

    def _open(self, segment: int) -> int:
        if self._fd is not None and segment == self._segment:
            return self._fd
        self._close()
        path = self.directory / segment_name(segment)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            if size == 0:
                self._write(fd, SEGMENT_MAGIC)
                size = len(SEGMENT_MAGIC)
                if self.sync != "none":
                    self._fsync(fd)
                    _sync_directory(self.directory)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        self._fd, self._segment, self._offset = fd, segment, size
        return fd

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if self.sync != "none":
                self._fsync(fd)
        os.close(fd)

    # --- the release thread ---------------------------------------------------------------------
    def _release_loop(self) -> None:
        while True:
            segment = self._releases.get()
            if segment is None:
                return
            batch = [segment]
            while True:  # every release waiting shares one barrier
                try:
                    more = self._releases.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._releases.put(None)
                    break
                batch.append(more)
            with contextlib.suppress(Exception):  # the store's flush never raises; nor must this stop the releases
                self._barrier()
            for released in batch:
                try:
                    (self.directory / segment_name(released)).unlink()
                except OSError:  # gone already (or undeletable: it is replayed, deduplicated, at the next start)
                    continue
                self._on_released(released)


def _by_segment(items: list[Write]) -> list[list[Write]]:
    """The writes in runs of one segment each, in order."""
    groups: list[list[Write]] = []
    for item in items:
        if groups and groups[-1][0].segment == item.segment:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _sync_directory(directory: Path) -> None:
    """fsync the directory, so a new segment file's entry survives a power loss."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
