"""IntakeLog: records on disk before the future says durable, segments rolled and released once every trace in
them is done (a trace across segments holds each), the size bound, write failures (ENOSPC injected) answered as
failures and recovered from; the replay of what a run left, in order, leaving out the traces already stored."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from monitor.config.intake import WalConfig
from monitor.consumer import Outcome, settled
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.intake.consumer import LoggedConsumer
from monitor.intake.log import FAILING_SECONDS, IntakeLog
from monitor.intake.records import Record, read_segment, segments_in
from monitor.intake.replay import IntakeReplay
from tests.support.completed_traces import synthetic_requests

SEGMENT = 64 * 1024


def _config(**overrides: object) -> WalConfig:
    return WalConfig.model_validate({"segment_bytes": SEGMENT, "sync": "always", **overrides})


def _record(payload: bytes) -> Record:
    return Record(payload, "protobuf", "traces", "grpc", 0.0)


async def _settle(log: IntakeLog) -> None:
    """Until the writer's releases have been handled."""
    for _ in range(100):
        await asyncio.sleep(0.01)
    log.writer.release(-1)  # a no-op release: the release thread handles releases in order
    for _ in range(50):
        await asyncio.sleep(0.01)


def _trace_id(n: int) -> str:
    return f"{n:032x}"


def test_an_appended_record_is_on_disk_when_its_future_says_durable(tmp_path: Path) -> None:
    async def scenario() -> None:
        log = IntakeLog(_config(), tmp_path)
        await log.start()
        assert await log.append(_record(b"one"), ["a"])
        assert await log.append(_record(b"two"), ["b"])
        [(_, path)] = segments_in(tmp_path)
        assert [r.payload for r in read_segment(path.read_bytes()).records] == [b"one", b"two"]
        await log.shutdown(1)

    asyncio.run(scenario())


def test_segments_roll_and_each_is_released_only_once_every_trace_in_it_is_done(tmp_path: Path) -> None:
    async def scenario() -> None:
        log = IntakeLog(_config(), tmp_path)
        await log.start()
        big = b"x" * (SEGMENT // 2)
        assert await log.append(_record(big), ["t1", "t2"])  # segment 1
        assert await log.append(_record(big), ["t2", "t3"])  # segment 2: t2 spans both
        assert await log.append(_record(big), ["t4"])  # segment 3
        assert [s for s, _ in segments_in(tmp_path)] == [1, 2, 3]
        log.done(["t1"])
        await _settle(log)
        assert [s for s, _ in segments_in(tmp_path)] == [1, 2, 3]  # t2 still holds segment 1
        log.done(["t3"])
        await _settle(log)
        assert [s for s, _ in segments_in(tmp_path)] == [1, 2, 3]  # and segment 2
        log.done(["t2"])
        await _settle(log)
        assert [s for s, _ in segments_in(tmp_path)] == [3]
        assert log.metrics.released._value.get() == 2
        assert log.segments_held == 1
        await log.shutdown(1)

    asyncio.run(scenario())


def test_a_release_waits_while_the_barrier_says_no_and_a_shutdown_leaves_it_for_the_next_start(tmp_path: Path) -> None:
    """The barrier (the conversations' turns kept) said no: the segment stays on disk, tried again every second;
    once it says yes the segment is deleted. At a shutdown while it still says no, the segment stays (replayed)."""
    kept = [False]
    asked = []

    def barrier() -> bool:
        asked.append(kept[0])
        return kept[0]

    async def scenario() -> None:
        log = IntakeLog(_config(), tmp_path, barrier=barrier)
        await log.start()
        big = b"x" * (SEGMENT // 2)
        assert await log.append(_record(big), ["t1"])  # segment 1
        assert await log.append(_record(big), ["t2"])  # segment 2
        assert await log.append(_record(big), ["t3"])  # segment 3, being written
        log.done(["t1"])
        await asyncio.sleep(2.5)
        assert [s for s, _ in segments_in(tmp_path)] == [1, 2, 3]  # not deleted: the barrier said no
        assert len(asked) >= 2  # asked again
        kept[0] = True
        for _ in range(200):  # tried again within a second or so: bounded at 10 s
            if [s for s, _ in segments_in(tmp_path)] == [2, 3]:
                break
            await asyncio.sleep(0.05)
        assert [s for s, _ in segments_in(tmp_path)] == [2, 3]
        kept[0] = False
        log.done(["t2"])
        await asyncio.sleep(0.2)
        await log.shutdown(1)
        assert [s for s, _ in segments_in(tmp_path)] == [2, 3]  # left for the next start

    asyncio.run(scenario())


def test_the_segment_being_written_is_released_once_idle_and_done(tmp_path: Path) -> None:
    now = [0.0]

    async def scenario() -> None:
        log = IntakeLog(_config(), tmp_path, clock=lambda: now[0])
        await log.start()
        assert await log.append(_record(b"a"), ["t1"])
        log.done(["t1"])
        log.release_idle()
        await _settle(log)
        assert len(segments_in(tmp_path)) == 1  # appended just now
        now[0] += 5
        log.release_idle()
        await _settle(log)
        assert segments_in(tmp_path) == []
        assert log.bytes_held == 0
        assert await log.append(_record(b"b"), ["t2"])  # a new segment
        assert [s for s, _ in segments_in(tmp_path)] == [2]
        await log.shutdown(1)

    asyncio.run(scenario())


def test_requests_past_max_bytes_are_answered_throttled_and_nothing_is_dropped(tmp_path: Path) -> None:
    async def scenario() -> None:
        log = IntakeLog(_config(max_bytes="1MiB"), tmp_path)
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        consumer = LoggedConsumer(Ingestor(assembler), log, assembler)
        outcomes = []
        for request in synthetic_requests(400, per_request=20):
            outcomes.append(await settled(consumer.ingest(request, receiver="grpc", encoding="protobuf")))
        accepted = [o for o in outcomes if o.outcome is Outcome.ACCEPTED]
        throttled = [o for o in outcomes if o.outcome is Outcome.THROTTLED]
        assert accepted and throttled
        assert outcomes.index(throttled[0]) == len(accepted)  # once full, every later one refused
        assert "intake log is full" in throttled[0].message
        assert log.metrics.full._value.get() == len(throttled)
        assert log.bytes_held <= 1024 * 1024
        on_disk = [r for _, p in segments_in(tmp_path) for r in read_segment(p.read_bytes()).records]
        assert len(on_disk) == len(accepted)  # every accepted request is in the log
        await log.shutdown(1)

    asyncio.run(scenario())


@pytest.mark.parametrize("sync", ["always", "batch", "none"])
@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EFBIG])  # EFBIG: a file size limit (RLIMIT_FSIZE)
def test_disk_full_answers_throttled_counts_and_recovers_when_writes_succeed_again(
    tmp_path: Path, sync: str, error: int
) -> None:
    full = [False]
    now = [0.0]

    def write(fd: int, data: bytes | memoryview) -> int:
        if full[0]:
            raise OSError(error, os.strerror(error))
        return os.write(fd, data)

    async def scenario() -> None:
        log = IntakeLog(_config(sync=sync), tmp_path, write=write, clock=lambda: now[0])
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        consumer = LoggedConsumer(Ingestor(assembler), log, assembler)
        first, second, third = synthetic_requests(3, per_request=1)
        assert (await settled(consumer.ingest(first, receiver="grpc", encoding="protobuf"))).outcome is Outcome.ACCEPTED
        full[0] = True
        outcome = await settled(consumer.ingest(second, receiver="grpc", encoding="protobuf"))
        assert outcome.outcome is Outcome.THROTTLED
        assert log.metrics.errors.labels(kind="no_space")._value.get() == 1
        refused = consumer.ingest(third, receiver="grpc", encoding="protobuf")  # refused before decoding meanwhile
        assert refused.outcome is Outcome.THROTTLED and refused.durable is None
        full[0] = False
        now[0] += FAILING_SECONDS + 0.1
        for request in (second, third):  # the exporter's retries
            assert (await settled(consumer.ingest(request, receiver="grpc", encoding="protobuf"))).outcome is (
                Outcome.ACCEPTED
            )
        records = [r.payload for _, p in segments_in(tmp_path) for r in read_segment(p.read_bytes()).records]
        assert records == [first, second, third]  # the failed write left nothing half written
        await log.shutdown(1)

    asyncio.run(scenario())


@pytest.mark.parametrize("sync", ["batch", "none"])
def test_batch_and_none_write_on_the_caller_and_only_batch_syncs(tmp_path: Path, sync: str) -> None:
    async def scenario() -> None:
        log = IntakeLog(_config(sync=sync, sync_interval="10ms"), tmp_path)
        await log.start()
        assert all(log.append(_record(bytes([i])), [str(i)]) is True for i in range(50))  # written, no future
        await log.shutdown(1)
        syncs = log.metrics.syncs._sum.get()
        assert (syncs > 0) == (sync == "batch")
        [(_, path)] = segments_in(tmp_path)
        assert [r.payload for r in read_segment(path.read_bytes()).records] == [bytes([i]) for i in range(50)]

    asyncio.run(scenario())


def _logged_run(tmp_path: Path, requests: list[bytes], receiver: str = "grpc") -> None:
    """A first run that logs `requests` and is stopped with nothing done (a kill leaves the same files)."""

    async def run() -> None:
        log = IntakeLog(_config(), tmp_path)
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        consumer = LoggedConsumer(Ingestor(assembler), log, assembler)
        for request in requests:
            assert (await settled(consumer.ingest(request, receiver=receiver, encoding="protobuf"))).accepted
        await log.shutdown(1)  # a kill would leave the same files: nothing was released

    asyncio.run(run())


def test_replay_feeds_what_was_left_in_order_without_the_stored_traces_then_releases(tmp_path: Path) -> None:
    requests = synthetic_requests(30, per_request=10)  # traces 1..30, three requests

    _logged_run(tmp_path, requests)
    segment = segments_in(tmp_path)[0][1]
    segment.write_bytes(segment.read_bytes() + b"\x07torn tail")  # a crash mid-write
    stored = {_trace_id(n) for n in range(1, 16)}  # evaluated and stored before the crash
    asked: list[list[str]] = []

    def stored_ids(ids: list[str]) -> set[str]:
        asked.append(ids)
        return stored & set(ids)

    async def second_run() -> tuple[list[str], IntakeLog]:
        log = IntakeLog(_config(), tmp_path)
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        replay = IntakeReplay(log, Ingestor(assembler), assembler, stored_ids)
        await replay.start()
        await replay.wait()
        assert replay.replayed == 3 and replay.torn == 1
        assert log.metrics.errors.labels(kind="corrupt")._value.get() == 1
        pending = list(assembler._pending)  # in arrival order
        log.done(pending)
        await _settle(log)
        assert segments_in(tmp_path) == []
        await log.shutdown(1)
        return pending, log

    pending, _ = asyncio.run(second_run())
    assert pending == [_trace_id(n) for n in range(16, 31)]
    assert sorted(t for ids in asked for t in ids) == sorted(_trace_id(n) for n in range(1, 31))  # each asked once


def test_without_a_store_replay_feeds_every_trace_again(tmp_path: Path) -> None:
    """`store.enabled: false`: nothing says what was evaluated before the restart: at least once."""
    requests = synthetic_requests(10, per_request=5)

    async def second_run() -> list[str]:
        log = IntakeLog(_config(), tmp_path)
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        replay = IntakeReplay(log, Ingestor(assembler), assembler, None)
        await replay.start()
        await replay.wait()
        await log.shutdown(1)
        return list(assembler._pending)

    _logged_run(tmp_path, requests, receiver="http")
    assert asyncio.run(second_run()) == [_trace_id(n) for n in range(1, 11)]


class _FinishingIngestor(Ingestor):
    """Evaluation as fast as replay feeds it: each replayed request's traces are done before the next is fed."""

    def __init__(self, assembler: TraceAssembler, log: IntakeLog, on_each: list[int]) -> None:
        super().__init__(assembler)
        self.intake_log = log
        self.on_each = on_each
        self.last: list[str] = []

    def replay(self, batch, receiver, stored):  # type: ignore[no-untyped-def]
        self.intake_log.done(self.last)  # the previous request's traces: evaluated and stored meanwhile
        self.on_each.append(len(segments_in(self.intake_log.directory)))
        outcome = super().replay(batch, receiver, stored)
        self.last = list(outcome.trace_ids)
        return outcome


def test_a_segment_is_not_released_while_its_records_are_still_being_replayed(tmp_path: Path) -> None:
    """Its first request's traces done before its last is fed: deleting it then would lose the rest to a kill."""
    _logged_run(tmp_path, synthetic_requests(6, per_request=2))
    assert len(segments_in(tmp_path)) == 1
    seen: list[int] = []

    async def second_run() -> None:
        log = IntakeLog(_config(), tmp_path)
        await log.start()
        assembler = TraceAssembler(quiet_period=60)
        ingestor = _FinishingIngestor(assembler, log, seen)
        replay = IntakeReplay(log, ingestor, assembler, None)
        await replay.start()
        await replay.wait()
        log.done(ingestor.last)
        await _settle(log)
        assert segments_in(tmp_path) == []  # released once its last request's traces are done
        await log.shutdown(1)

    asyncio.run(second_run())
    assert seen == [1, 1, 1]  # the segment was still on disk before each of its requests was fed


def test_a_replay_stopped_at_shutdown_leaves_its_segments_for_the_next_start(tmp_path: Path) -> None:
    _logged_run(tmp_path, synthetic_requests(20, per_request=2))
    before = segments_in(tmp_path)

    async def stopped_run() -> int:
        log = IntakeLog(_config(), tmp_path)
        await log.start()
        assembler = TraceAssembler(quiet_period=60, max_pending_spans=4)  # room for one request: replay waits
        replay = IntakeReplay(log, Ingestor(assembler), assembler, None)
        await replay.start()
        await asyncio.sleep(0.3)
        await replay.shutdown(1)
        await log.shutdown(1)
        return replay.replayed

    replayed = asyncio.run(stopped_run())
    assert 0 < replayed < 10
    assert segments_in(tmp_path) == before
