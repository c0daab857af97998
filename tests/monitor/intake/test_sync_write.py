"""The intake log's fast path (`sync: batch`, `none`): the record is written on the caller's thread before
`ingest` returns (readable from another file handle, as the replay reads it), the answer never waits for an
fsync (`batch` syncs in the background, on its own thread), and a failed write (ENOSPC, part of the record
written) is answered throttled at once, cut off the file, counted, and recovered from."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from pathlib import Path

import pytest

from monitor.config.intake import WalConfig
from monitor.consumer import Outcome
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.intake.consumer import LoggedConsumer
from monitor.intake.log import FAILING_SECONDS, IntakeLog
from monitor.intake.records import read_segment, segments_in
from tests.support.completed_traces import synthetic_requests


def _config(sync: str, interval: str = "20ms") -> WalConfig:
    return WalConfig.model_validate({"segment_bytes": 64 * 1024, "sync": sync, "sync_interval": interval})


def _on_disk(directory: Path) -> list[bytes]:
    return [r.payload for _, p in segments_in(directory) for r in read_segment(p.read_bytes()).records]


async def _until(condition: object, what: str) -> None:
    for _ in range(500):  # bounded: 5 s
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not within 5 s: {what}")


@pytest.mark.parametrize("sync", ["batch", "none"])
def test_an_accepted_request_is_on_disk_when_ingest_returns_written_on_the_callers_thread(
    tmp_path: Path, sync: str
) -> None:
    writers: list[str] = []

    def write(fd: int, data: bytes | memoryview) -> int:
        writers.append(threading.current_thread().name)
        return os.write(fd, data)

    async def scenario() -> None:
        log = IntakeLog(_config(sync), tmp_path, write=write)
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        consumer = LoggedConsumer(Ingestor(assembler), log, assembler)
        requests = synthetic_requests(3, per_request=1)
        for n, request in enumerate(requests, 1):
            outcome = consumer.ingest(request, receiver="grpc", encoding="protobuf")
            assert outcome.outcome is Outcome.ACCEPTED and outcome.durable is None  # answered without waiting
            assert _on_disk(tmp_path) == requests[:n]  # another handle reads it: in the page cache already
        assert set(writers) == {threading.current_thread().name}
        await log.shutdown(1)

    asyncio.run(scenario())


def test_batch_fsyncs_in_the_background_and_the_answer_never_waits_for_it(tmp_path: Path) -> None:
    gate = threading.Event()
    syncing: list[str] = []

    def fsync(fd: int) -> None:
        syncing.append(threading.current_thread().name)
        gate.wait(5)
        os.fsync(fd)

    async def scenario() -> None:
        log = IntakeLog(_config("batch"), tmp_path, fsync=fsync)
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        consumer = LoggedConsumer(Ingestor(assembler), log, assembler)
        first, second = synthetic_requests(2, per_request=1)
        assert consumer.ingest(first, receiver="grpc", encoding="protobuf").durable is None
        await _until(lambda: syncing, "the first record's fsync starts")
        # That fsync is blocked: a request answered meanwhile does not wait for it.
        outcome = consumer.ingest(second, receiver="grpc", encoding="protobuf")
        assert outcome.outcome is Outcome.ACCEPTED and outcome.durable is None
        assert _on_disk(tmp_path) == [first, second]
        assert log.metrics.syncs._sum.get() == 0  # nothing reported synced yet
        gate.set()
        await _until(lambda: len(syncing) >= 2, "the second record's fsync (written since the first)")
        await _until(lambda: log.metrics.syncs._sum.get() > 0, "the syncs reported")
        assert threading.current_thread().name not in syncing  # never on the caller's thread
        await log.shutdown(1)

    asyncio.run(scenario())


@pytest.mark.parametrize(("error", "kind"), [(errno.EIO, "io"), (errno.ENOSPC, "no_space")])
def test_a_failed_background_fsync_is_counted_and_refuses_requests_for_a_while(
    tmp_path: Path, error: int, kind: str
) -> None:
    now = [0.0]

    def fsync(fd: int) -> None:
        raise OSError(error, os.strerror(error))

    async def scenario() -> None:
        log = IntakeLog(_config("batch"), tmp_path, fsync=fsync, clock=lambda: now[0])
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        consumer = LoggedConsumer(Ingestor(assembler), log, assembler)
        first, second = synthetic_requests(2, per_request=1)
        assert consumer.ingest(first, receiver="grpc", encoding="protobuf").outcome is Outcome.ACCEPTED
        await _until(lambda: log.metrics.errors.labels(kind=kind)._value.get() > 0, "the failed fsync counted")
        assert consumer.ingest(second, receiver="grpc", encoding="protobuf").outcome is Outcome.THROTTLED
        now[0] += FAILING_SECONDS + 0.1
        assert consumer.ingest(second, receiver="grpc", encoding="protobuf").outcome is Outcome.ACCEPTED
        await log.shutdown(1)

    asyncio.run(scenario())


@pytest.mark.parametrize("sync", ["batch", "none"])
def test_enospc_mid_record_is_answered_throttled_at_once_cut_back_and_recovered(tmp_path: Path, sync: str) -> None:
    full = [False]
    now = [0.0]

    def write(fd: int, data: bytes | memoryview) -> int:
        if full[0]:
            os.write(fd, data[: len(data) // 2])  # part of the record reaches the file, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return os.write(fd, data)

    async def scenario() -> None:
        log = IntakeLog(_config(sync), tmp_path, write=write, clock=lambda: now[0])
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        consumer = LoggedConsumer(Ingestor(assembler), log, assembler)
        first, second, third = synthetic_requests(3, per_request=1)
        assert consumer.ingest(first, receiver="grpc", encoding="protobuf").outcome is Outcome.ACCEPTED
        held = log.bytes_held
        full[0] = True
        outcome = consumer.ingest(second, receiver="grpc", encoding="protobuf")
        assert outcome.outcome is Outcome.THROTTLED and outcome.durable is None  # answered at once
        assert "could not be written" in outcome.message
        assert log.metrics.errors.labels(kind="no_space")._value.get() == 1
        assert log.bytes_held == held
        [(_, path)] = segments_in(tmp_path)
        assert not read_segment(path.read_bytes()).torn  # the half record was cut off
        assert consumer.ingest(third, receiver="grpc", encoding="protobuf").outcome is Outcome.THROTTLED  # failing
        full[0] = False
        now[0] += FAILING_SECONDS + 0.1
        for request in (second, third):  # the exporter's retries
            assert consumer.ingest(request, receiver="grpc", encoding="protobuf").outcome is Outcome.ACCEPTED
        assert _on_disk(tmp_path) == [first, second, third]
        await log.shutdown(1)

    asyncio.run(scenario())
