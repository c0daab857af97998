"""IntakeReplay: at start the requests of the segments the last run left (not every trace in them evaluated and
stored) go through the ingestor again, in order, each trace the store already has left out (it was evaluated and
stored before the restart). Their traces then hold their old segments, released like any other once done. A torn
or corrupt record ends its segment's replay (counted); nothing here stops the start.

The segments are opened before the receivers (new requests go to new segments), and replayed in the background
while the receivers take new requests: a full log takes minutes to evaluate again, and exporters should not be
refused for that long. Replay takes at most half the assembler's room, so new intake keeps the rest. Stopped at
shutdown, what was not replayed stays in the log for the next start."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from evaluators.traces import TraceDecodeError
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor, trace_ids_of
from monitor.intake.log import IntakeLog
from monitor.intake.records import read_segment

log = logging.getLogger(__name__)
ROOM_WAIT_SECONDS = 0.05
ROOM_SHARE = 0.5  # replay waits while the assembler holds more than this share of its limits

StoredIds = Callable[[list[str]], set[str]]  # of these trace ids, those the store has (blocking)


class IntakeReplay:
    def __init__(
        self, intake_log: IntakeLog, ingestor: Ingestor, assembler: TraceAssembler, stored: StoredIds | None
    ) -> None:
        """`stored`: None without a store (nothing is left out: a trace evaluated before the restart whose
        segment was not released yet is evaluated again)."""
        self.log = intake_log
        self.ingestor = ingestor
        ingestor.record_trace_ids = True  # the replayed traces are held by their segments
        self.assembler = assembler
        self.stored = stored
        self.replayed = 0
        self.torn = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open the segments left over (before the receivers append to new ones) and replay them in the background."""
        segments = self.log.open()
        if segments:
            self._task = asyncio.get_running_loop().create_task(self._replay(segments), name="intake log replay")

    async def wait(self) -> None:
        """Until the replay is done (at once when there was nothing to replay)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _replay(self, segments: list[tuple[int, Path]]) -> None:
        log.info("intake log: replaying %d segments left by the last run, receivers open meanwhile", len(segments))
        known: dict[str, bool] = {}
        left = self.log.metrics.replay_left
        left.set(len(segments))
        for segment, path in segments:
            await self._segment(segment, path, known)
            left.dec()
        log.info(
            "intake log: replayed %d requests from %d segments (%d traces already stored left out)%s",
            self.replayed,
            len(segments),
            sum(known.values()),
            f"; {self.torn} segments ended in a torn or corrupt record" if self.torn else "",
        )

    async def shutdown(self, grace: float) -> None:
        """Stop a replay still running: its segments are not released, so the next start replays them again."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        log.warning(
            "intake log: replay stopped at shutdown after %d requests; the next start replays the rest", self.replayed
        )

    async def _segment(self, segment: int, path: Path, known: dict[str, bool]) -> None:
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            log.warning("intake log: could not read %s: %s", path, exc)
            self.log.metrics.errors.labels(kind="io").inc()
            return
        pin = f"replaying segment {segment}"  # held while its records are fed: its traces may finish meanwhile
        self.log.hold(segment, [pin])
        read = read_segment(data)
        if read.torn:
            self.torn += 1
            self.log.metrics.errors.labels(kind="corrupt").inc()
        for record in read.records:
            await self._room()
            try:
                batch = await asyncio.to_thread(
                    Ingestor.decode, record.payload, record.encoding, record.signal, record.receiver
                )
            except TraceDecodeError:  # never logged (only accepted requests are): a record from elsewhere
                self.log.metrics.errors.labels(kind="corrupt").inc()
                continue
            ids = trace_ids_of(batch)
            unknown = [t for t in ids if t not in known]
            if unknown:
                stored = await self._stored(unknown)
                known.update((t, t in stored) for t in unknown)
            outcome = self.ingestor.replay(batch, record.receiver, {t for t in ids if known[t]})
            assembling, holds = self.assembler.assembling, self.log.holds
            self.log.hold(segment, [t for t in outcome.trace_ids if assembling(t) or holds(t)])
            self.replayed += 1
            self.log.metrics.replayed.inc()
        self.log.done([pin])  # released now if its traces are done (a segment of stored traces only: at once)

    async def _stored(self, trace_ids: list[str]) -> set[str]:
        """Those of the ids the store has; none without a store, or when it cannot be read (logged)."""
        if self.stored is None:
            return set()
        try:
            return await asyncio.to_thread(self.stored, trace_ids)
        except Exception as exc:
            log.warning("intake log: the store could not say which traces it has (%s): replayed all", exc)
            return set()

    async def _room(self) -> None:
        """Wait while the assembler is over half its limits (the pool is evaluating what replay fed it)."""
        assembler = self.assembler
        while (
            assembler.spans_held > assembler.max_pending_spans * ROOM_SHARE
            or assembler.bytes_held > assembler.max_pending_bytes * ROOM_SHARE
        ):
            await asyncio.sleep(ROOM_WAIT_SECONDS)
