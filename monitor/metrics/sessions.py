"""The session tracker's metrics (`monitor.sessions.tracker.SessionTracker` is the only code that updates them):
sessions open (read from the tracker at scrape time), completed by how they ended, turns per session, turns that
arrived late or were cut, and sessions cut early.

The `service` label comes from traces: it is sanitised and capped like the result series' (`service_label`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

TURN_BUCKETS = (1, 2, 3, 5, 8, 13, 20, 35, 50, 100, 200, 500)
CUT_REASONS = ("max_open_sessions", "max_open_turns", "shutdown")


class OpenSessions(Protocol):
    """What the gauge reads of the tracker."""

    @property
    def open_sessions(self) -> int: ...


class SessionMetrics:
    """`agent_monitor_sessions_open`, `agent_sessions_completed_total{service,ended}`, `agent_session_turns`,
    `agent_monitor_session_turns_late_total`, `agent_monitor_session_turns_cut_total`,
    `agent_monitor_session_turns_unshared_total` and `agent_monitor_sessions_cut_total{reason}`."""

    def __init__(self, registry: CollectorRegistry, service_label: Callable[[str], str] = str) -> None:
        r = registry
        self._service_label = service_label
        self.open = Gauge(
            "agent_monitor_sessions_open", "Conversations held open (waiting for more turns).", registry=r
        )
        self.completed_sessions = Counter(
            "agent_sessions_completed",
            "Conversations completed, by how they ended (idle, explicit_end, cut).",
            ["service", "ended"],
            registry=r,
        )
        self.turns = Histogram(
            "agent_session_turns",
            "Turns of each completed conversation (those cut by sessions.max_turns included).",
            ["service"],
            buckets=TURN_BUCKETS,
            registry=r,
        )
        self.late_turns = Counter(
            "agent_monitor_session_turns_late",
            "Turns that arrived after their conversation was completed (counted, not evaluated again).",
            registry=r,
        )
        self.cut_turns = Counter(
            "agent_monitor_session_turns_cut",
            "Turns not kept because their conversation had sessions.max_turns already.",
            registry=r,
        )
        self.unshared_turns = Counter(
            "agent_monitor_session_turns_unshared",
            "Turns not written to the shared PostgreSQL store: it could not be reached while sessions.max_open_turns"
            " turns waited (their conversations are evaluated without them).",
            registry=r,
        )
        self.cut_sessions = Counter(
            "agent_monitor_sessions_cut",
            "Conversations completed early: to make room (max_open_sessions, max_open_turns) or at shutdown.",
            ["reason"],
            registry=r,
        )
        for reason in CUT_REASONS:
            self.cut_sessions.labels(reason=reason)

    def observe(self, tracker: OpenSessions) -> None:
        """Read the open sessions from `tracker` at every scrape from now on."""
        self.open.set_function(lambda: tracker.open_sessions)

    def completed(self, service: str, ended: str, turns: int) -> None:
        """One session completed: its service, how it ended, and its turns (kept and cut)."""
        label = self._service_label(service or "unknown")
        self.completed_sessions.labels(service=label, ended=ended).inc()
        self.turns.labels(service=label).observe(turns)

    def late(self, turns: int = 1) -> None:
        self.late_turns.inc(turns)

    def turns_cut(self, turns: int = 1) -> None:
        self.cut_turns.inc(turns)

    def unshared(self, turns: int) -> None:
        self.unshared_turns.inc(turns)

    def cut(self, reason: str, sessions: int = 1) -> None:
        self.cut_sessions.labels(reason=reason).inc(sessions)
