"""SegmentWriter: the intake log's writes and syncs. With `sync: batch` (the default) and `none`, a record is
framed and written (os.write: in the page cache, so it survives a kill of the process) on the caller's thread
before the answer; with `batch` a sync thread fsyncs what was written at most every `sync_interval`, off the
answer's path. With `always` a writer thread writes and fsyncs, then reports which writes are durable (the loop
answers those requests): group commit, every write queued while an fsync runs shares the next one. Released
segments are deleted by a release thread, after `barrier()` (what must outlive them is kept: the conversations'
turns), so a slow store never holds up the writes; while it says no they wait, tried again every
BARRIER_RETRY_SECONDS (at stop they stay on disk, replayed at the next start)."""

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

BARRIER_RETRY_SECONDS = 1.0  # after a barrier that said no, before the releases waiting try it again


@dataclass(slots=True)
class Write:
    segment: int
    record: Record  # `always`: framed (its CRC computed) on the writer thread
    size: int  # its framed size (`framed_size`)
    token: Any  # handed back in the report


# (written and synced, failed, the error of the failures (or of a background sync), seconds the sync took or None)
Report = Callable[[list[Write], list[Write], OSError | None, float | None], None]


class SegmentWriter:
    def __init__(
        self,
        directory: Path,
        sync: str,
        sync_interval: float,
        report: Report,
        *,
        barrier: Callable[[], bool] = lambda: True,
        on_released: Callable[[int], None] = lambda segment: None,
        write: Callable[[int, bytes | memoryview], int] = os.write,
        fsync: Callable[[int], None] = os.fsync,
    ) -> None:
        """`report` is called on the writer or sync thread; `write`/`fsync`: os.write/os.fsync (tests inject
        failures)."""
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
        # The segment being written; under `_lock` (the caller's writes and the sync thread share it).
        self._lock = threading.Lock()
        self._written = threading.Condition(self._lock)  # batch: something to sync (or stopping)
        self._fd: int | None = None
        self._segment = -1
        self._offset = 0
        self._unsynced = False  # batch: written since the last sync
        self._directory_unsynced = False  # batch: a segment file created since the last sync
        self._retired: list[int] = []  # batch: descriptors of segments left, to sync and close
        self._stopping = False
        self._last_sync = 0.0
        self._threads: list[threading.Thread] = []
        self._stop_seen = False

    def start(self) -> None:
        if self._threads:
            return
        self._stopping = False
        main = {"always": self._loop, "batch": self._sync_loop}.get(self.sync)
        self._threads = [threading.Thread(target=self._release_loop, name="intake-log-release", daemon=True)]
        if main is not None:
            self._threads.append(threading.Thread(target=main, name="intake-log", daemon=True))
        for thread in self._threads:
            thread.start()

    def put(self, write: Write) -> None:
        """`always`: queue the write for the writer thread (reported once written and synced)."""
        self._queue.put(write)

    def write(self, segment: int, record: Record) -> OSError | None:
        """`batch`, `none`: frame the record and write it at the end of `segment` now, on the caller's thread (in
        the page cache when this returns None); the error of a failed write (the file cut back to before it)."""
        data = encode(record)
        with self._lock:
            idle = not self._unsynced
            error = self._append(segment, data)
            if error is None and self.sync == "batch":
                self._unsynced = True
                if idle:  # only then: a wake-up per write would take the GIL from the caller
                    self._written.notify()
        return error

    def release(self, segment: int) -> None:
        self._releases.put(segment)

    def stop(self, timeout: float = 5.0) -> None:
        """Write and sync what is queued or written, delete what was released, stop the threads."""
        threads, self._threads = self._threads, []
        if not threads:
            return
        self._queue.put(None)
        self._releases.put(None)
        with self._lock:
            self._stopping = True
            self._written.notify()
        for thread in threads:
            thread.join(timeout)
        if self.sync == "none":
            with self._lock:
                self._close()

    # --- always: the writer thread --------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                break
            if not self._batch(first):
                break
        with self._lock:
            self._close()

    def _batch(self, first: Write) -> bool:
        """Write `first` and what else is queued (one write call per segment: the thread takes the GIL back as
        few times as it can while the event loop is busy); sync (a segment left within the batch before the next
        is opened); report. False once told to stop."""
        synced: list[Write] = []
        unsynced: list[Write] = []  # written to the segment being written, not synced yet
        failed: list[Write] = []
        error: OSError | None = None
        seconds = None
        with self._lock:
            for group in _by_segment(self._drain([first])):
                if unsynced and group[0].segment != self._segment and self._fd is not None:
                    problem = _fsync_error(self._fsync, self._fd)  # before `_open` closes it
                    (failed if problem else synced).extend(unsynced)
                    unsynced, error = [], problem or error
                problem = self._append(group[0].segment, b"".join(encode(item.record) for item in group))
                (failed if problem else unsynced).extend(group)
                error = problem or error
            fd = self._fd
        if unsynced and fd is not None:  # outside the lock, as `batch`'s syncs
            started = time.monotonic()
            problem = _fsync_error(self._fsync, fd)
            seconds = time.monotonic() - started
            (failed if problem else synced).extend(unsynced)
            error = problem or error
        self._report(synced, failed, error, seconds)
        return not self._stop_seen

    def _drain(self, items: list[Write]) -> list[Write]:
        """`items` and every write queued now (`_stop_seen` once told to stop)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return items
            if item is None:
                self._stop_seen = True
                return items
            items.append(item)

    # --- batch: the sync thread -----------------------------------------------------------------
    def _sync_loop(self) -> None:
        """Sync what was written, at most every `sync_interval`; at stop, once more, and close."""
        while True:
            with self._lock:
                self._written.wait_for(lambda: self._unsynced or bool(self._retired) or self._stopping)
                due = self._last_sync + self.sync_interval - time.monotonic()
                if due > 0 and not self._stopping:
                    self._written.wait_for(lambda: self._stopping, timeout=due)
                stopping = self._stopping
            self._sync_written()
            if stopping:
                break
        with self._lock:
            self._close(fsync=False)  # synced just now

    def _sync_written(self) -> None:
        """fsync the segments written since the last sync (a duplicate of the descriptor, outside the lock: the
        caller's writes go on meanwhile), and the directory when a segment was created; report its time."""
        with self._lock:
            retired, self._retired = self._retired, []
            current = os.dup(self._fd) if self._unsynced and self._fd is not None else None
            directory, self._directory_unsynced = self._directory_unsynced, False
            self._unsynced = False
        if current is None and not retired and not directory:
            return
        started = time.monotonic()
        error: OSError | None = None
        for fd in [*retired, *([current] if current is not None else [])]:
            try:
                self._fsync(fd)
            except OSError as exc:
                error = exc
            finally:
                os.close(fd)
        if directory:
            try:
                _sync_directory(self.directory)
            except OSError as exc:
                error = exc
        self._last_sync = time.monotonic()
        self._report([], [], error, self._last_sync - started)

    # --- the segment being written (under `_lock`) ----------------------------------------------
    def _append(self, segment: int, data: bytes) -> OSError | None:
        """Write framed records at the end of `segment`, in one call; on a failure, cut the file back."""
        try:
            fd = self._open(segment)
        except OSError as exc:
            return exc
        try:
            _write_all(self._write, fd, data)
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
                _write_all(self._write, fd, SEGMENT_MAGIC)
                size = len(SEGMENT_MAGIC)
                if self.sync == "always":
                    self._fsync(fd)
                    _sync_directory(self.directory)
                elif self.sync == "batch":
                    self._directory_unsynced = True  # synced with the first record
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        self._fd, self._segment, self._offset = fd, segment, size
        return fd

    def _close(self, *, fsync: bool = True) -> None:
        """Close the segment being written: `always` syncs it first, `batch` hands it to the sync thread."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self.sync == "batch" and fsync:
            self._retired.append(fd)
            self._written.notify()
            return
        with contextlib.suppress(OSError):
            if self.sync == "always" and fsync:
                self._fsync(fd)
        os.close(fd)

    # --- the release thread ---------------------------------------------------------------------
    def _release_loop(self) -> None:
        waiting: list[int] = []  # released, held back by a barrier that said no
        while _more_releases(self._releases, waiting):  # at stop, those waiting stay on disk (replayed)
            if not _passes(self._barrier):  # every release waiting shares one
                continue
            batch, waiting = waiting, []
            for released in batch:
                try:
                    (self.directory / segment_name(released)).unlink()
                except OSError:  # gone already (or undeletable: it is replayed, deduplicated, at the next start)
                    continue
                self._on_released(released)


def _passes(barrier: Callable[[], bool]) -> bool:
    """The barrier's answer; no when it raises (it never should; nor must that stop the releases)."""
    try:
        return bool(barrier())
    except Exception:
        return False


def _more_releases(releases: queue.Queue[int | None], waiting: list[int]) -> bool:
    """Add the next releases to `waiting` (or, after BARRIER_RETRY_SECONDS with those waiting, none); False at
    the stop mark."""
    try:
        segment = releases.get(timeout=BARRIER_RETRY_SECONDS if waiting else None)
    except queue.Empty:
        return True
    if segment is None:
        return False
    waiting.extend(_with_queued(segment, releases))
    return True


def _with_queued(first: int, releases: queue.Queue[int | None]) -> list[int]:
    """`first` and the releases queued behind it (the stop mark, None, is left in the queue)."""
    batch = [first]
    while True:
        try:
            more = releases.get_nowait()
        except queue.Empty:
            return batch
        if more is None:
            releases.put(None)
            return batch
        batch.append(more)


def _by_segment(items: list[Write]) -> list[list[Write]]:
    """The writes in runs of one segment each, in order."""
    groups: list[list[Write]] = []
    for item in items:
        if groups and groups[-1][0].segment == item.segment:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _write_all(write: Callable[[int, bytes | memoryview], int], fd: int, data: bytes) -> None:
    """Write all of `data` (a short write, as at the edge of a full disk, is followed by the rest)."""
    view = memoryview(data)
    while view:
        view = view[write(fd, view) :]


def _fsync_error(fsync: Callable[[int], None], fd: int) -> OSError | None:
    """fsync `fd`; the error, if it failed."""
    try:
        fsync(fd)
    except OSError as exc:
        return exc
    return None


def _sync_directory(directory: Path) -> None:
    """fsync the directory, so a new segment file's entry survives a power loss."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
