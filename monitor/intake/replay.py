"""IntakeReplay: at start, before the receivers open, the requests of the segments the last run left (not every
trace in them evaluated and stored) go through the ingestor again, in order, each trace the store already has left
out (it was evaluated and stored before the restart). Their traces then hold their old segments, released like any
other once done. A torn or corrupt record ends its segment's replay (counted); nothing here stops the start."""

from __future__ import annotations

import asyncio
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

    async def start(self) -> None:
        segments = self.log.open()
        if not segments:
            return
        known: dict[str, bool] = {}
        for segment, path in segments:
            await self._segment(segment, path, known)
        self.log.release_done(segment for segment, _ in segments)
        log.info(
            "intake log: replayed %d requests from %d segments (%d traces already stored left out)%s",
            self.replayed,
            len(segments),
            sum(known.values()),
            f"; {self.torn} segments ended in a torn or corrupt record" if self.torn else "",
        )

    async def shutdown(self, grace: float) -> None:
        """Nothing to stop: the replay is done once `start` returns."""

    async def _segment(self, segment: int, path: Path, known: dict[str, bool]) -> None:
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            log.warning("intake log: could not read %s: %s", path, exc)
            self.log.metrics.errors.labels(kind="io").inc()
            return
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
