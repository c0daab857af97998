"""The gRPC receiver's bounds (read slots, read timeout, in-flight byte budget) and its early token check,
against a real grpc.aio server.

A blocked client stream stands for a request whose message is still arriving: the server has taken
the call (and one read slot) but not its message yet, and reserves no bytes for it. No timing is
asserted: waits are bounded polls on the server's own state. The receiver feeds a `TracesSink` (no engine).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import pytest
from google.rpc import error_details_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client import CollectorRegistry

from monitor.auth import BearerAuth
from monitor.config import GrpcReceiverConfig, ReceiversConfig
from monitor.metrics.intake import IntakeMetrics
from monitor.receivers.grpc_receiver import GrpcReceiver
from monitor.receivers.inflight import InflightBytes
from tests.support.sink import TracesSink

pytestmark = pytest.mark.integration  # each test starts a process or a server

METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
TOKEN = "s3cret"
AUTH = (("authorization", f"Bearer {TOKEN}"),)
MAX_MESSAGE = 64 * 1024
LIMIT = 1000  # far under one maximum-size message: only one call fits at a time


def valid_request() -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "step"
    span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
    return request.SerializeToString()


class Server:
    def __init__(
        self, receiver: GrpcReceiver, registry: CollectorRegistry, sink: TracesSink, channel: grpc.aio.Channel
    ) -> None:
        self.receiver, self.registry, self.sink, self.channel = receiver, registry, sink, channel

    @property
    def in_use(self) -> int:
        return self.receiver.inflight.in_use

    @property
    def reading(self) -> int:
        return self.receiver.reads.in_use

    def count(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, {"receiver": "grpc", **labels}) or 0.0

    async def export(self, payload: bytes, metadata: tuple = AUTH) -> grpc.StatusCode:
        try:
            await self.channel.unary_unary(METHOD)(payload, metadata=metadata, timeout=10)
        except grpc.aio.AioRpcError as exc:
            return exc.code()
        return grpc.StatusCode.OK

    def held_call(self, release: asyncio.Event, payload: bytes, metadata: tuple = AUTH) -> grpc.aio.StreamUnaryCall:
        """A call whose one message is sent only once `release` is set."""

        async def messages() -> AsyncIterator[bytes]:
            await release.wait()
            yield payload

        return self.channel.stream_unary(METHOD)(messages(), metadata=metadata, timeout=10)

    async def until(self, condition: Callable[[], bool]) -> None:
        for _ in range(500):
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("condition not reached")


@pytest.fixture
def run() -> Callable[[Callable[[Server], Awaitable[None]]], None]:
    def runner(
        body: Callable[[Server], Awaitable[None]],
        *,
        read_timeout: float = 20.0,
        max_concurrent_reads: int = 16,
        preempt_after: float = 1.0,
    ) -> None:
        async def main() -> None:
            registry, sink = CollectorRegistry(), TracesSink()
            section = GrpcReceiverConfig(
                host="127.0.0.1", port=0, max_message_bytes=MAX_MESSAGE, max_concurrent_reads=max_concurrent_reads
            )
            receiver = GrpcReceiver(
                ReceiversConfig(grpc=section, read_timeout=read_timeout),
                sink,
                auth=BearerAuth(TOKEN),
                telemetry=IntakeMetrics(registry).receiver("grpc"),
                inflight=InflightBytes(LIMIT),
                preempt_after=preempt_after,
            )
            await receiver.start()
            try:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{receiver.bound_port}") as channel:
                    await asyncio.wait_for(body(Server(receiver, registry, sink, channel)), timeout=30)
            finally:
                await receiver.shutdown(grace=0.5)

        asyncio.run(main())

    return runner


def assert_throttled(error: grpc.aio.AioRpcError) -> None:
    """UNAVAILABLE with a RetryInfo in both trailers: the OTLP throttling answer."""
    assert error.code() is grpc.StatusCode.UNAVAILABLE
    trailers = dict(error.trailing_metadata() or ())
    retry = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    assert retry.retry_delay.seconds + retry.retry_delay.nanos > 0
    assert "grpc-status-details-bin" in trailers


def test_a_call_waiting_for_its_message_holds_no_bytes_and_the_others_go_through(run):
    async def body(server: Server) -> None:
        release = asyncio.Event()
        calls = [server.held_call(release, valid_request()) for _ in range(4)]
        await server.until(lambda: server.reading == 4)
        assert server.in_use == 0  # nothing reserved for messages not yet arrived
        for _ in range(3):
            assert await server.export(valid_request()) is grpc.StatusCode.OK
        release.set()
        for call in calls:
            await call  # the held calls complete normally once their message arrives
        assert server.reading == 0 and server.in_use == 0
        assert server.count("agent_monitor_requests_total", code="OK") == 7
        assert server.count("agent_monitor_spans_refused_total", reason="throttled") == 0

    run(body)


def test_calls_beyond_the_read_slots_get_unavailable_with_retry_info(run):
    async def body(server: Server) -> None:
        release = asyncio.Event()
        held = [server.held_call(release, valid_request()) for _ in range(2)]
        await server.until(lambda: server.reading == 2)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await server.channel.unary_unary(METHOD)(valid_request(), metadata=AUTH, timeout=10)
        assert_throttled(caught.value)
        assert server.count("agent_monitor_spans_refused_total", reason="throttled") == 1
        assert server.count("agent_monitor_requests_total", code="UNAVAILABLE") == 1
        release.set()
        for call in held:
            await call
        assert await server.export(valid_request()) is grpc.StatusCode.OK  # slots free again
        assert server.reading == 0 and server.in_use == 0

    run(body, max_concurrent_reads=2, preempt_after=60)


def test_with_every_read_slot_taken_the_oldest_idle_call_is_cut_to_make_room(run):
    async def body(server: Server) -> None:
        never = asyncio.Event()
        idle = [asyncio.ensure_future(server.held_call(never, valid_request())) for _ in range(2)]
        await server.until(lambda: server.reading == 2)
        # Bounded poll on the slots' own age: both have waited past preempt_after.
        await server.until(lambda: all(time.monotonic() - s.started > 0.25 for s in server.receiver.reads._slots))
        assert await server.export(valid_request()) is grpc.StatusCode.OK  # took the slot of the oldest
        done, waiting = await asyncio.wait(idle, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        [cut], [other] = done, waiting  # whichever of the two reached the server first
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await cut
        assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        assert "while other calls waited" in (caught.value.details() or "")
        assert server.reading == 1  # a slot is free again: the other one keeps waiting
        assert await server.export(valid_request()) is grpc.StatusCode.OK
        assert server.receiver.reads.preempted == 1 and not other.done()
        assert server.count("agent_monitor_spans_refused_total", reason="timeout") == 1
        assert server.count("agent_monitor_spans_refused_total", reason="throttled") == 0
        other.cancel()
        await server.until(lambda: server.reading == 0)

    run(body, max_concurrent_reads=2, preempt_after=0.2)


def test_a_message_the_budget_cannot_take_gets_unavailable_and_a_lone_large_one_is_admitted(run):
    async def body(server: Server) -> None:
        budget = server.receiver.inflight
        assert budget.try_acquire(LIMIT)  # another request's bytes (an HTTP body arriving) fill the budget
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await server.channel.unary_unary(METHOD)(valid_request(), metadata=AUTH, timeout=10)
        assert_throttled(caught.value)
        assert server.count("agent_monitor_spans_refused_total", reason="throttled") == 1
        assert server.in_use == LIMIT and server.reading == 0
        budget.release(LIMIT)
        large = ExportTraceServiceRequest.FromString(valid_request())
        large.resource_spans[0].scope_spans[0].spans[0].name = "x" * (2 * LIMIT)
        assert await server.export(large.SerializeToString()) is grpc.StatusCode.OK  # alone, over the limit
        assert server.in_use == 0

    run(body)


def test_a_call_whose_message_does_not_arrive_in_time_is_cut_and_counted(run):
    async def body(server: Server) -> None:
        never = asyncio.Event()
        calls = [server.held_call(never, valid_request()) for _ in range(3)]
        for call in calls:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
            assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            assert "not received" in (caught.value.details() or "")
        assert server.reading == 0 and server.in_use == 0
        assert server.count("agent_monitor_spans_refused_total", reason="timeout") == 3
        assert server.count("agent_monitor_requests_total", code="DEADLINE_EXCEEDED") == 3
        assert await server.export(valid_request()) is grpc.StatusCode.OK

    run(body, read_timeout=0.3)


def test_unauthenticated_call_is_refused_before_its_message_is_read(run):
    async def body(server: Server) -> None:
        never = asyncio.Event()
        call = server.held_call(never, valid_request(), metadata=(("authorization", "Bearer wrong"),))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call  # answered although the message was never sent
        assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert server.in_use == 0
        assert await server.export(valid_request(), metadata=()) is grpc.StatusCode.UNAUTHENTICATED
        assert server.count("agent_monitor_requests_total", code="UNAUTHENTICATED") == 2
        assert server.count("agent_monitor_spans_refused_total", reason="unauthenticated") == 2
        assert server.count("agent_monitor_spans_received_total") == 0
        assert server.in_use == 0

    run(body)


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (valid_request(), grpc.StatusCode.OK),
        (b"\xff\xff\xff", grpc.StatusCode.INVALID_ARGUMENT),
        (b"\x0a" * (MAX_MESSAGE + 10), grpc.StatusCode.RESOURCE_EXHAUSTED),
    ],
    ids=["accepted", "malformed", "too_large"],
)
def test_the_budget_returns_to_zero_after_each_answer(run, payload, code):
    async def body(server: Server) -> None:
        for _ in range(3):
            assert await server.export(payload) is code
            await server.until(lambda: server.in_use == 0)

    run(body)


def test_the_budget_returns_to_zero_when_ingest_throttles(run):
    async def body(server: Server) -> None:
        assert await server.export(valid_request()) is grpc.StatusCode.OK
        server.sink.throttle(spans=1)
        assert await server.export(valid_request()) is grpc.StatusCode.UNAVAILABLE
        assert server.in_use == 0
        assert server.count("agent_monitor_spans_refused_total", reason="throttled") == 1
        assert server.count("agent_monitor_requests_total", code="UNAVAILABLE") == 1
        assert server.count("agent_monitor_spans_received_total") == 1 == server.sink.span_count

    run(body)


def test_slots_and_budget_return_to_zero_when_the_client_sends_no_message_or_gives_up(run):
    async def body(server: Server) -> None:
        async def no_messages() -> AsyncIterator[bytes]:
            return
            yield b""

        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await server.channel.stream_unary(METHOD)(no_messages(), metadata=AUTH, timeout=10)
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert server.in_use == 0
        never = asyncio.Event()
        call = server.held_call(never, valid_request())
        await server.until(lambda: server.reading == 1)
        call.cancel()
        await server.until(lambda: server.reading == 0)
        assert server.in_use == 0

    run(body)
