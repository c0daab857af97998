"""The intake log's metrics (monitor/intake): what it holds, what it replayed and released, its syncs and errors.
The held bytes and segments are read from the log at scrape time (`observe`); the rest is counted by the log."""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from monitor.metrics.zeroed import counter_at_zero

WAL_ERROR_KINDS = ("no_space", "io", "corrupt")
SYNC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class Holdings(Protocol):
    @property
    def bytes_held(self) -> int: ...

    @property
    def segments_held(self) -> int: ...


class IntakeLogMetrics:
    """`agent_monitor_intake_log_*`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.bytes = Gauge("agent_monitor_intake_log_bytes", "Bytes of the intake log's segments on disk.", registry=r)
        self.segments = Gauge(
            "agent_monitor_intake_log_segments", "Segment files of the intake log on disk.", registry=r
        )
        self.replayed = Counter(
            "agent_monitor_intake_log_records_replayed",
            "Export requests replayed from the intake log at start (not yet evaluated and stored before it).",
            registry=r,
        )
        self.replay_left = Gauge(
            "agent_monitor_intake_log_replay_segments",
            "Segments left by the last run not yet replayed (the replay runs while the receivers take new requests; "
            "0 once it is done).",
            registry=r,
        )
        self.released = Counter(
            "agent_monitor_intake_log_segments_released",
            "Segments of the intake log deleted once every trace in them was evaluated and stored.",
            registry=r,
        )
        self.syncs = Histogram(
            "agent_monitor_intake_log_sync_seconds",
            "How long each fsync of the intake log took (its count: the syncs).",
            buckets=SYNC_BUCKETS,
            registry=r,
        )
        self.errors = counter_at_zero(
            "agent_monitor_intake_log_errors",
            "Intake log failures: writes or syncs that failed (requests answered throttled), corrupt records.",
            "kind",
            WAL_ERROR_KINDS,
            r,
        )
        self.full = Counter(
            "agent_monitor_intake_log_full",
            "Export requests answered throttled because the intake log held intake.wal.max_bytes.",
            registry=r,
        )

    def observe(self, log: Holdings) -> None:
        """Read the log's holdings at every scrape from now on."""
        self.bytes.set_function(lambda: float(log.bytes_held))
        self.segments.set_function(lambda: float(log.segments_held))
