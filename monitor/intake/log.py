"""IntakeLog: the intake log's loop side. It frames each accepted request as a record, picks its segment (a new
one past `segment_bytes`), counts the bytes held against `max_bytes`, and keeps, per segment, how many traces with
spans in it are not done yet (evaluated and stored, or dropped for good); a trace's segments are known by its id
until it is done (`hold`, `done`). A segment with none left is released (deleted by the writer's release thread);
the segment being written is released once idle for `IDLE_RELEASE_SECONDS`. With `sync: batch` and `none` a
record is written on the caller's thread in `append`; with `always` by the writer thread. Not thread-safe: owned by
the event loop (the writer's and sync thread's reports come back through `call_soon_threadsafe`)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from monitor.config.intake import WalConfig
from monitor.intake.records import SEGMENT_MAGIC, Record, framed_size, segments_in
from monitor.intake.writer import SegmentWriter, Write
from monitor.lifecycle import cancel_task
from monitor.logutil import RateLimitedLogger
from monitor.metrics.intake_log import IntakeLogMetrics

log = logging.getLogger(__name__)
IDLE_RELEASE_SECONDS = 1.0  # the segment being written, with no trace left, is released after this long idle
FAILING_SECONDS = 1.0  # after a failed write, requests are refused this long before a write is tried again
# No room for the write: the disk full, a quota, a file size limit (RLIMIT_FSIZE, the filesystem's largest file).
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


@dataclass(slots=True)
class _Segment:
    size: int  # bytes on disk (or on their way)
    outstanding: int = 0  # traces with spans in it that are not done


class IntakeLog:
    def __init__(
        self,
        config: WalConfig,
        directory: Path,
        metrics: IntakeLogMetrics | None = None,
        *,
        barrier: Callable[[], bool] = lambda: True,
        write: Callable[[int, bytes | memoryview], int] = os.write,
        fsync: Callable[[int], None] = os.fsync,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`barrier()`: whether what must outlive the segments released is kept (the conversations' turns; it may
        block a while), run before they are deleted: when False they are tried again later; `write`/`fsync`:
        injected by tests to fail."""
        self.config = config
        self.directory = directory
        self.metrics = metrics if metrics is not None else IntakeLogMetrics(CollectorRegistry())
        self.clock = clock
        self.writer = SegmentWriter(
            directory,
            config.sync,
            config.sync_interval,
            self._reported_threadsafe,
            barrier=barrier,
            on_released=self._released_threadsafe,
            write=write,
            fsync=fsync,
        )
        self.problems = RateLimitedLogger(log, per_minute=6)
        self._segments: dict[int, _Segment] = {}
        self._traces: dict[str, list[int]] = {}
        self._active = 0
        self._last_append = 0.0
        self._failing_until = 0.0
        self.bytes_held = 0
        self.replay_segments: list[tuple[int, Path]] = []  # found at open: replayed, then released when done
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._opened = False
        self._closed = False

    @property
    def running(self) -> bool:
        """Started and not shut down (receivers served without it, as some tests do, pass requests through)."""
        return self._opened and self._loop is not None and not self._closed

    @property
    def segments_held(self) -> int:
        return len(self._segments)

    # --- lifecycle ------------------------------------------------------------------------------
    def open(self) -> list[tuple[int, Path]]:
        """Create the directory, find the segments left by the last run (to replay), start the writer."""
        if self._opened:
            return self.replay_segments
        self._opened = True
        self.directory.mkdir(parents=True, exist_ok=True)
        self.replay_segments = segments_in(self.directory)
        for segment, path in self.replay_segments:
            size = path.stat().st_size
            self._segments[segment] = _Segment(size)
            self.bytes_held += size
        self._active = self.replay_segments[-1][0] + 1 if self.replay_segments else 1
        self.writer.start()
        self.metrics.observe(self)
        return self.replay_segments

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.open)
        self._task = self._loop.create_task(self._tick(), name="intake-log-release")

    async def shutdown(self, grace: float) -> None:
        """Sync what is written and stop the writer (what is held stays on disk for the next start; the segment
        being written goes too when nothing holds it)."""
        task, self._task = self._task, None
        await cancel_task(task)
        held = self._segments.get(self._active)
        if held is not None and held.outstanding == 0:
            self._roll()
        await asyncio.to_thread(self.writer.stop)
        self._closed = True

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(IDLE_RELEASE_SECONDS / 2)
            self.release_idle()

    # --- appending ------------------------------------------------------------------------------
    def refusal(self, size: int) -> str | None:
        """Why a request of `size` bytes cannot be logged now: "full", "failing"; None when it can."""
        if self.clock() < self._failing_until:
            return "failing"
        if self.bytes_held + size + 64 > self.config.max_bytes:
            return "full"
        return None

    def append(self, record: Record, trace_ids: Iterable[str]) -> bool | asyncio.Future[bool]:
        """Log the record, its traces held by its segment. `batch`, `none`: written now, on the caller's thread
        (True: in the page cache, it survives a kill of the process; `batch` syncs it within `sync_interval`;
        False: it could not be written, answer throttled). `always`: queued for the writer thread; the future is
        True once written and synced, False when it could not be."""
        size = framed_size(record)
        segment = self._segments.get(self._active)
        if segment is not None and segment.size + size > self.config.segment_bytes:
            self._roll()
            segment = None
        if segment is None:
            segment = self._segments[self._active] = _Segment(len(SEGMENT_MAGIC))
            self.bytes_held += len(SEGMENT_MAGIC)
        self._last_append = self.clock()
        if self.config.sync != "always":
            error = self.writer.write(self._active, record)
            if error is not None:
                self._failed(error, 1)
                return False
            segment.size += size
            self.bytes_held += size
            self.hold(self._active, trace_ids)
            return True
        segment.size += size
        self.bytes_held += size
        self.hold(self._active, trace_ids)
        loop = self._loop or asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self.writer.put(Write(self._active, record, size, future))
        return future

    def _roll(self) -> None:
        """The next record starts a new segment; the one left is released if nothing holds it."""
        left = self._active
        self._active += 1
        held = self._segments.get(left)
        if held is not None and held.outstanding == 0:
            self._release(left)

    # --- traces ---------------------------------------------------------------------------------
    def hold(self, segment: int, trace_ids: Iterable[str]) -> None:
        """The traces have spans in `segment`: it is kept until each is `done`."""
        held = self._segments.get(segment)
        if held is None:
            return
        for trace_id in trace_ids:
            segments = self._traces.setdefault(trace_id, [])
            if segment not in segments:
                segments.append(segment)
                held.outstanding += 1

    def holds(self, trace_id: str) -> bool:
        return trace_id in self._traces

    def done(self, trace_ids: Iterable[str]) -> None:
        """The traces are evaluated and their rows written (or dropped for good): their segments no longer wait for
        them."""
        for trace_id in trace_ids:
            for segment in self._traces.pop(trace_id, ()):
                held = self._segments.get(segment)
                if held is None:
                    continue
                held.outstanding -= 1
                if held.outstanding == 0 and segment != self._active:
                    self._release(segment)

    def release_idle(self) -> None:
        """Release the segment being written when no trace holds it and nothing was appended for a while."""
        held = self._segments.get(self._active)
        if held is None or held.outstanding or self.clock() - self._last_append < IDLE_RELEASE_SECONDS:
            return
        self._roll()

    def _release(self, segment: int) -> None:
        held = self._segments.pop(segment)
        self.bytes_held -= held.size
        self.writer.release(segment)

    # --- the writer's reports -------------------------------------------------------------------
    def _reported_threadsafe(
        self, written: list[Write], failed: list[Write], error: OSError | None, seconds: float | None
    ) -> None:
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(self._reported, written, failed, error, seconds)

    def _reported(
        self, written: list[Write], failed: list[Write], error: OSError | None, seconds: float | None
    ) -> None:
        if seconds is not None:
            self.metrics.syncs.observe(seconds)
        for item in written:
            _resolve(item.token, True)
        if error is not None:
            self._failed(error, len(failed))
        for item in failed:
            held = self._segments.get(item.segment)
            if held is not None:
                held.size -= item.size
                self.bytes_held -= item.size
            _resolve(item.token, False)

    def _failed(self, error: OSError, requests: int) -> None:
        """A write (`requests` of them: answered throttled) or a background sync (0) failed: count it, log it,
        refuse requests for `FAILING_SECONDS`."""
        kind = "no_space" if error.errno in NO_SPACE_ERRNOS else "io"
        self.metrics.errors.labels(kind=kind).inc(max(requests, 1))
        self._failing_until = self.clock() + FAILING_SECONDS
        if requests:
            self.problems.warning(
                "write_failed", "intake log: %d requests not written (%s): answered throttled", requests, error
            )
        else:
            self.problems.warning("sync_failed", "intake log: an fsync failed (%s)", error)

    def _released_threadsafe(self, segment: int) -> None:
        loop = self._loop
        if loop is None:
            self.metrics.released.inc()
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self.metrics.released.inc)


def _resolve(token: object, ok: bool) -> None:
    if isinstance(token, asyncio.Future) and not token.done():
        token.set_result(ok)
