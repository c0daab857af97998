"""Poll mode's metrics, `agent_monitor_poll_*`: runs, their duration, traces read, errors, how far each source is
behind, and which replica polls it. Label values are the configured source names and fixed statuses and kinds (no
cap needed)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
RUN_STATUSES = ("ok", "error")
ERROR_KINDS = (
    "auth", "client", "server", "timeout", "connection", "decode", "io", "checkpoint", "writeback", "internal",
    "cursor_loop", "page_limit", "byte_limit", "span_limit", "lease",
)  # fmt: skip


class PollMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.runs = Counter("agent_monitor_poll_runs", "Runs of a polled source, by status.", ["source", "status"],
                            registry=r)  # fmt: skip
        self.duration = Histogram(
            "agent_monitor_poll_duration_seconds", "Time of one run of a polled source (its evaluation included).",
            ["source"], buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.traces = Counter(
            "agent_monitor_poll_traces", "Traces a polled source handed to evaluation (spans, for a span feed).",
            ["source"], registry=r,
        )  # fmt: skip
        self.lag = Gauge(
            "agent_monitor_poll_lag_seconds",
            "How far behind now a polled source's checkpoint is (now - mark; grows while runs fail); 0 for a span "
            "feed that is caught up.",
            ["source"], registry=r,
        )  # fmt: skip
        self.leader = Gauge(
            "agent_monitor_poll_leader",
            "1 while this replica polls the source, 0 while another replica does (replicas sharing a PostgreSQL "
            "store poll each source from one of them); always 1 without a shared store.",
            ["source"], registry=r,
        )  # fmt: skip
        self.errors = Counter("agent_monitor_poll_errors", "Failed runs of a polled source, by kind (span_limit, "
                              "writeback: runs that went on).",
                              ["source", "kind"], registry=r)  # fmt: skip

    def add_source(self, source: str) -> None:
        """Create the source's series at 0, so that increase() and alerts see its first failure."""
        for status in RUN_STATUSES:
            self.runs.labels(source=source, status=status)
        for kind in ERROR_KINDS:
            self.errors.labels(source=source, kind=kind)
        self.traces.labels(source=source)
        self.duration.labels(source=source)
        self.lag.labels(source=source)
        self.leader.labels(source=source)
