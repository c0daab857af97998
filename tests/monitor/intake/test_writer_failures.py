"""SegmentWriter at the edge of a full disk: a short write of a new segment's header is followed by the rest (a torn
header would make the whole file unreadable, its records lost), and with `sync: always` a batch that moves on to a
new segment syncs the one it leaves first: a failed fsync there answers that segment's writes as failed (throttled),
never as durable."""

from __future__ import annotations

import errno
import os
import queue
import threading
from pathlib import Path

import pytest

from monitor.intake.records import SEGMENT_MAGIC, Record, read_segment, segment_name, segments_in
from monitor.intake.writer import SegmentWriter, Write


def _record(payload: bytes) -> Record:
    return Record(payload, "protobuf", "traces", "grpc", 0.0)


def _path_of(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.mark.parametrize("sync", ["always", "batch", "none"])
def test_a_short_write_of_a_new_segments_header_is_completed(tmp_path: Path, sync: str) -> None:
    def write(fd: int, data: bytes | memoryview) -> int:
        if bytes(data) == SEGMENT_MAGIC and os.fstat(fd).st_size == 0:
            return os.write(fd, data[:3])  # what room there was
        return os.write(fd, data)

    reports: queue.Queue[tuple[list[Write], list[Write]]] = queue.Queue()
    writer = SegmentWriter(tmp_path, sync, 0.01, lambda ok, failed, error, s: reports.put((ok, failed)), write=write)
    writer.start()
    if sync == "always":
        writer.put(Write(1, _record(b"one"), 0, "one"))
        written, failed = reports.get(timeout=5)
        assert [w.token for w in written] == ["one"] and not failed
    else:
        assert writer.write(1, _record(b"one")) is None
    writer.stop()
    [(_, path)] = segments_in(tmp_path)
    assert path.read_bytes().startswith(SEGMENT_MAGIC)
    assert [r.payload for r in read_segment(path.read_bytes()).records] == [b"one"]


def test_always_a_segment_left_within_a_batch_whose_fsync_fails_answers_its_writes_failed(tmp_path: Path) -> None:
    first_segment = segment_name(1)
    failing = threading.Event()  # set: segment 1's fsyncs fail

    def fsync(fd: int) -> None:
        if failing.is_set() and _path_of(fd).endswith(first_segment):
            raise OSError(errno.EIO, "Input/output error")
        os.fsync(fd)

    reports: queue.Queue[tuple[list[Write], list[Write], OSError | None]] = queue.Queue()
    writer = SegmentWriter(
        tmp_path, "always", 0.01, lambda ok, bad, error, s: reports.put((ok, bad, error)), fsync=fsync
    )
    # Segment 1 opened (its header synced as it is created) and written in a batch of its own, synced.
    writer.put(Write(1, _record(b"opens"), 0, "opens"))
    writer.start()
    assert [w.token for w in reports.get(timeout=5)[0]] == ["opens"]
    failing.set()
    # One batch (the writer thread drains the queue under the lock held here), which writes to segment 1, then
    # moves on to segment 2.
    with writer._lock:
        writer.put(Write(1, _record(b"a"), 0, "a"))
        writer.put(Write(2, _record(b"b"), 0, "b"))
    written, failed, error = reports.get(timeout=5)
    writer.stop()
    assert [w.token for w in failed] == ["a"]  # segment 1's fsync failed: not durable
    assert [w.token for w in written] == ["b"]
    assert error is not None and error.errno == errno.EIO
