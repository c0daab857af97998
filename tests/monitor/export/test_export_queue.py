"""The exporter's bounds against endpoints that do not work, over the real SDK exporter: `offer` takes at most
`queue_size` records and drops (and counts) the rest at once, an export that fails is counted failed, and `close`
counts what it could not send as dropped."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from monitor.config import MonitorConfig
from monitor.export.counts import EXPORTS
from monitor.export.exporter import EvaluationExporter
from monitor.export.from_config import exporter_of
from monitor.export.records import RecordBuilder
from monitor.outcomes import ResultRow, TraceOutcome
from tests.support.ports import closed_port

pytestmark = pytest.mark.integration  # the SDK's gRPC channel to loopback


def _exporter(endpoint: str, **evaluations: object) -> EvaluationExporter:
    section = {"enabled": True, "endpoint": endpoint, "timeout": "500ms", **evaluations}
    exporter = exporter_of(MonitorConfig.model_validate({"export": {"evaluations": section}}))
    assert exporter is not None
    return exporter


def _records(count: int) -> list:
    row = ResultRow(None, None, None, "error_free", "trace", 0.0, False, None, "failed", None, 0.0)
    outcome = TraceOutcome("ab" * 16, "svc", 1.0, True, (), (), None, None, 1, 1.0, 0.0, (row,) * count)
    return RecordBuilder().of_trace(outcome._replace(root_span_id="cd" * 8))


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A port that accepts connections and never answers: each export waits for its timeout."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_an_unreachable_endpoint_fails_and_counts_every_batch() -> None:
    exporter = _exporter(f"http://127.0.0.1:{closed_port()}", batch_size=2, queue_size=5)
    EXPORTS.take()
    try:
        assert exporter.offer(_records(20)) == 5  # at once: the queue's room, the rest dropped
        assert exporter.flush(20.0)
    finally:
        exporter.close(1.0)
    assert EXPORTS.take() == {"dropped": 15, "failed": 5}


def test_a_silent_endpoint_never_holds_offer_up(silent_endpoint: str) -> None:
    exporter = _exporter(silent_endpoint, batch_size=1, queue_size=3)
    EXPORTS.take()
    try:
        exporter.offer(_records(1))  # the sender takes it and waits for the endpoint
        taken = [exporter.offer(_records(1)) for _ in range(10)]
        assert sum(taken) <= 4 and taken[-1] == 0  # the queue filled while the export waited; the rest dropped
    finally:
        exporter.close(0.2)
    counts = EXPORTS.take()
    assert counts.get("exported", 0) == 0
    assert counts["dropped"] >= 7
    assert counts["dropped"] + counts.get("failed", 0) == 11  # every record accounted for


def test_after_close_offers_are_dropped_and_close_is_idempotent() -> None:
    exporter = _exporter(f"http://127.0.0.1:{closed_port()}")
    exporter.close(1.0)
    exporter.close(1.0)
    EXPORTS.take()
    assert exporter.offer(_records(3)) == 0
    assert EXPORTS.take() == {"dropped": 3}
    assert exporter.offer([]) == 0
