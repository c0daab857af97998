"""SQL fixtures of conversations on either database (tests/support/backends.py), following the schema v5 contract
(monitor/store/schema.py): the schema set up by a real store, then `sessions` rows (turns as SESSION_TURN_FIELDS
arrays), the turns' `traces` rows and session-level `results` rows (level "session", trace_id the last turn's,
session_id set, span/agent/model NULL) inserted behind its back, as the write side leaves them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from monitor.store.schema import SESSION_TURN_FIELDS
from tests.support.backends import Backend


@dataclass
class TurnRow:
    trace_id: str
    start: float  # seconds
    user_message: str | None = "hello"
    answer: str | None = "hi there"
    tool_calls: list[str] = field(default_factory=list)
    errors: list[list[str]] = field(default_factory=list)  # [kind, name, message]
    agents: list[str] = field(default_factory=lambda: ["support"])
    input_tokens: int | None = 100
    output_tokens: int | None = 20
    cost_usd: float | None = 0.001
    seconds: float = 2.0

    def values(self) -> list[Any]:
        start_ns, end_ns = int(self.start * 1e9), int((self.start + self.seconds) * 1e9)
        found = dict(
            trace_id=self.trace_id,
            start_ns=start_ns,
            end_ns=end_ns,
            user_message=self.user_message,
            answer=self.answer,
            tool_calls=self.tool_calls,
            errors=self.errors,
            agents=self.agents,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
        )
        return [found[name] for name in SESSION_TURN_FIELDS]


@dataclass
class SessionRow:
    session_id: str
    turns: list[TurnRow]
    completed_at: float
    service: str = "support-bot"
    source: str = "session.id"
    ended: str = "idle"
    failed: int = 0
    turns_cut: int = 0


def insert_session(backend: Backend, session: SessionRow, traces: bool = True) -> None:
    """The `sessions` row and (`traces`) a `traces` row per turn, stored when the turn ended."""
    turns = session.turns
    tokens = sum((t.input_tokens or 0) + (t.output_tokens or 0) for t in turns)
    priced = [t.cost_usd for t in turns if t.cost_usd is not None]
    backend.execute(
        "INSERT INTO sessions (session_id, service, source, started_at, last_turn_at, completed_at, ended, turn_count,"
        " turns_cut, total_tokens, cost_usd, failed, turns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session.session_id,
            session.service,
            session.source,
            turns[0].start,
            turns[-1].start + turns[-1].seconds,
            session.completed_at,
            session.ended,
            len(turns) + session.turns_cut,
            session.turns_cut,
            tokens,
            sum(priced) if priced else None,
            session.failed,
            json.dumps([t.values() for t in turns]),
        ),
    )
    if traces:
        for t in turns:
            backend.execute(
                "INSERT INTO traces (trace_id, created_at, service, input, output, span_count, duration_ms, has_errors)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    t.trace_id,
                    t.start + t.seconds + 1,
                    session.service,
                    t.user_message,
                    t.answer,
                    3,
                    t.seconds * 1000,
                    1 if t.errors else 0,
                ),
            )


def insert_session_result(
    backend: Backend,
    session: SessionRow,
    evaluator: str,
    passed: int | None,
    at: float,
    explanation: str | None = None,
    turn: int | None = None,
    score: float | None = None,
) -> None:
    """A session-level result: trace_id the last turn's, its turn (if any) in details."""
    details = {} if turn is None else {"turn": turn, "turn_trace_id": session.turns[turn - 1].trace_id}
    backend.execute(
        "INSERT INTO results (created_at, trace_id, span_id, service, agent, model, evaluator, level, score, passed,"
        " skip_reason, explanation, details, session_id) VALUES (?, ?, NULL, ?, NULL, NULL, ?, 'session', ?, ?, ?, ?,"
        " ?, ?)",
        (
            at,
            session.turns[-1].trace_id,
            session.service,
            evaluator,
            score,
            passed,
            "no_verdict" if passed is None else None,
            explanation,
            json.dumps(details) if details else None,
            session.session_id,
        ),
    )
