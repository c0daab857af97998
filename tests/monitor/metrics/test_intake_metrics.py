"""A receiver's telemetry: the series present from start-up, series created on first use only, and what an
`IngestOutcome` counts."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from monitor.consumer import IngestOutcome, Outcome
from monitor.metrics.intake import RECEIVERS, REFUSAL_REASONS, IntakeMetrics

FAMILIES = {"agent_monitor_spans_refused", "agent_monitor_spans_received", "agent_monitor_requests"}


def series(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in registry.collect()
        if f.name in FAMILIES | {"agent_monitor_attributes_dropped"}
        for s in f.samples
        if s.name.endswith("_total")
    }


def test_every_refusal_reason_of_both_receivers_is_present_at_0_and_nothing_else():
    registry = CollectorRegistry()
    intake = IntakeMetrics(registry)
    expected = {
        ("agent_monitor_spans_refused_total", (("reason", reason), ("receiver", receiver))): 0.0
        for receiver in RECEIVERS
        for reason in REFUSAL_REASONS
    }
    assert series(registry) == expected
    intake.receiver("grpc")
    intake.receiver("poll")
    assert series(registry) == expected  # a receiver's telemetry creates its series on first use only


def test_an_outcome_counts_refusals_always_and_accepted_spans_only_when_accepted():
    registry = CollectorRegistry()
    telemetry = IntakeMetrics(registry).receiver("http")
    telemetry.ingested(IngestOutcome(Outcome.THROTTLED, refused=[("pending_bytes", 4)]))
    telemetry.ingested(IngestOutcome(Outcome.MALFORMED, refused=[("malformed", 1)]))
    found = series(registry)
    assert found[("agent_monitor_spans_refused_total", (("reason", "pending_bytes"), ("receiver", "http")))] == 4
    assert not any(name == "agent_monitor_spans_received_total" for name, _ in found)  # not created by a refusal
    telemetry.ingested(IngestOutcome(Outcome.ACCEPTED))
    assert series(registry)[("agent_monitor_spans_received_total", (("receiver", "http"),))] == 0  # created at 0
    outcome = IngestOutcome(
        Outcome.ACCEPTED,
        accepted=5,
        rejected=3,
        refused=[("invalid_id", 1), ("per_trace_cap", 2)],
        dropped_attributes=6,
    )
    telemetry.ingested(outcome)
    telemetry.request("OK")
    found = series(registry)
    assert found[("agent_monitor_spans_received_total", (("receiver", "http"),))] == 5
    assert found[("agent_monitor_spans_refused_total", (("reason", "invalid_id"), ("receiver", "http")))] == 1
    assert found[("agent_monitor_spans_refused_total", (("reason", "per_trace_cap"), ("receiver", "http")))] == 2
    assert found[("agent_monitor_attributes_dropped_total", (("reason", "too_deep"), ("receiver", "http")))] == 6
    assert found[("agent_monitor_requests_total", (("code", "OK"), ("receiver", "http")))] == 1
