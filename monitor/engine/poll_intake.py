"""DaemonSink (the PollSink of `monitor.consumer`): polled traces into the daemon's own pipeline, so a polled
trace is evaluated, counted and stored exactly like a received one. Whole traces go straight to the evaluation
pool (they need no assembling); a span feed's spans go to the assembler, like received spans. `claim` asks the
assembler: a trace that is also arriving through the receivers, or was evaluated within the late-span window, is
evaluated once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from evaluators.traces.records import LogRecord, SpanRecord
from monitor.consumer import PolledTrace
from monitor.engine.assembler import CompletedTrace, TraceAssembler
from monitor.engine.pool import EvaluationPool
from monitor.metrics.intake import ReceiverTelemetry

FEED_RECEIVER = "poll"  # the `receiver` label of spans read by a span feed
ROOM_WAIT_SECONDS = 0.05


class DaemonSink:
    def __init__(
        self,
        assembler: TraceAssembler,
        pool: EvaluationPool,
        telemetry: ReceiverTelemetry,
        room: Callable[[int], bool] = lambda spans: True,
        stored: Callable[[], object] = lambda: None,
    ) -> None:
        """`telemetry`: the span feed's (`IntakeMetrics.receiver(FEED_RECEIVER)`: it counts like a receiver);
        `room(spans)`: whether a polled trace of that many spans may go to the pool now (Admission.poll_room:
        polled traces use the capacity the receivers leave); `stored()`: blocks until the result store has written
        what it was handed (so a poller's checkpoint moves only past traces evaluated and stored)."""
        self.assembler = assembler
        self.pool = pool
        self.telemetry = telemetry
        self.room = room
        self.stored = stored

    def claim(self, trace_ids: list[str]) -> list[str]:
        return self.assembler.claim(trace_ids)

    async def evaluate(self, traces: list[PolledTrace], stop: Callable[[], bool] = lambda: False) -> list[PolledTrace]:
        """Submit the traces to the pool as it has room for them (until `stop()`); return, once the pool is done
        with every one submitted and the store has written their rows, those submitted."""
        loop = asyncio.get_running_loop()
        waiting = []
        submitted: list[PolledTrace] = []
        for trace in traces:
            await self._room_for(len(trace.spans), stop)
            if stop() or not self.pool.accepting:
                break
            now = time.monotonic()
            done = loop.create_future()
            completed = CompletedTrace(
                trace.trace_id, trace.spans, "polled", now, now, trace.logs, now, on_done=_resolver(done)
            )
            if not self.pool.submit(completed):
                break
            waiting.append(done)
            submitted.append(trace)
        if waiting:
            await asyncio.gather(*waiting)
            await asyncio.to_thread(self.stored)
        return submitted

    async def wait_for_room(self, stop: Callable[[], bool] = lambda: False) -> None:
        await self._room_for(1, stop)

    async def _room_for(self, spans: int, stop: Callable[[], bool]) -> None:
        """Wait until the pool takes a polled trace of `spans` spans, the pool closes, or `stop()`."""
        while not self.room(spans) and self.pool.accepting and not stop():
            await asyncio.sleep(ROOM_WAIT_SECONDS)

    def feed(self, spans: list[SpanRecord], logs: list[LogRecord]) -> None:
        if logs:
            self.assembler.add_logs(logs)
        result = self.assembler.add(spans)  # the assembler counts late and duplicate spans itself
        if result.over_trace_cap:
            self.telemetry.refused("per_trace_cap", result.over_trace_cap)
        self.telemetry.accepted(result.accepted)


def _resolver(done: asyncio.Future[None]) -> Callable[[], None]:
    def resolve() -> None:
        if not done.done():
            done.set_result(None)

    return resolve
