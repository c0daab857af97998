"""The review reader's conversations on SQLite and PostgreSQL: the sessions list (filters, keyset pages), one
session (turns, verdicts tied to the turns they name) and the session a trace is a turn of, from rows inserted
as the schema v5 contract says the write side leaves them."""

from __future__ import annotations

import time

import pytest

from monitor.review.session_models import SessionFilter
from tests.support.backends import Backend
from tests.support.session_rows import SessionRow, TurnRow, insert_session, insert_session_result
from tests.support.signature_rows import set_up


def tid(n: int) -> str:
    return f"{n:032x}"


def seeded(backend: Backend) -> tuple[float, list[SessionRow]]:
    now = time.time()
    set_up(backend)
    rephrase = SessionRow(
        "conv-rephrase",
        [
            TurnRow(tid(1), now - 900, "Where is my order 42?", "Orders ship in 3 days.", tool_calls=["lookup_order"]),
            TurnRow(
                tid(2),
                now - 800,
                "I asked where order 42 IS",
                None,
                errors=[["tool", "lookup_order", "HTTP 503"]],
                tool_calls=["lookup_order"],
            ),
            TurnRow(
                tid(3), now - 700, "Let me talk to a human", "Transferring you.", tool_calls=["request_human_agent"]
            ),
        ],
        completed_at=now - 100,
        failed=2,
    )
    clean = SessionRow("conv-clean", [TurnRow(tid(4), now - 600)], completed_at=now - 50, service="faq-bot")
    tie = SessionRow("conv-tie", [TurnRow(tid(5), now - 500)], completed_at=now - 50)
    for session in (rephrase, clean, tie):
        insert_session(backend, session)
    insert_session_result(backend, rephrase, "user_rephrase", 0, now - 100, "the user asked again", turn=2)
    insert_session_result(backend, rephrase, "human_handoff_request", 0, now - 100, "asked for a human", turn=3)
    insert_session_result(backend, rephrase, "conversation_completion", 1, now - 99, "resolved by handoff")
    insert_session_result(backend, clean, "user_rephrase", 1, now - 50)
    return now, [rephrase, clean, tie]


def test_sessions_list_filters_and_pages(backend: Backend) -> None:
    now, _ = seeded(backend)
    reader = backend.reader()
    try:
        page = reader.sessions(SessionFilter(), 10)
        assert [s.session_id for s in page.items] == ["conv-tie", "conv-clean", "conv-rephrase"]
        assert page.next_cursor is None
        rephrase = page.items[2]
        assert rephrase.trace_ids == [tid(1), tid(2), tid(3)] and rephrase.turn_count == 3 and rephrase.failed == 2
        assert rephrase.total_tokens == 360 and rephrase.cost_usd == pytest.approx(0.003)
        assert [(v.evaluator, v.outcome, v.turn) for v in rephrase.verdicts] == [
            ("user_rephrase", "fail", 2),
            ("human_handoff_request", "fail", 3),
            ("conversation_completion", "pass", None),
        ]
        assert rephrase.duration_ms == pytest.approx(202_000, rel=1e-6)

        ids = lambda where: [s.session_id for s in reader.sessions(where, 10).items]  # noqa: E731
        assert ids(SessionFilter(failing=True)) == ["conv-rephrase"]
        assert ids(SessionFilter(service="faq-bot")) == ["conv-clean"]
        assert ids(SessionFilter(evaluator="user_rephrase")) == ["conv-clean", "conv-rephrase"]
        assert ids(SessionFilter(evaluator="user_rephrase", failing=True)) == ["conv-rephrase"]
        assert ids(SessionFilter(evaluator="conversation_completion", failing=True)) == []
        assert ids(SessionFilter(since=now - 60)) == ["conv-tie", "conv-clean"]
        assert ids(SessionFilter(until=now - 60)) == ["conv-rephrase"]

        seen, cursor = [], None
        for _ in range(5):
            one = reader.sessions(SessionFilter(), 1, cursor)
            seen += [s.session_id for s in one.items]
            cursor = one.next_cursor
            if cursor is None:
                break
        assert seen == ["conv-tie", "conv-clean", "conv-rephrase"]  # the tie on completed_at kept apart by id
        with pytest.raises(ValueError):
            reader.sessions(SessionFilter(), 1, "not-a-cursor")
    finally:
        reader.close()  # type: ignore[attr-defined]


def test_one_session_with_turns_and_verdicts(backend: Backend) -> None:
    seeded(backend)
    reader = backend.reader()
    try:
        detail = reader.session("conv-rephrase")
        assert detail is not None
        assert [t.turn for t in detail.turns] == [1, 2, 3]
        second = detail.turns[1]
        assert second.trace_id == tid(2) and second.user_message == "I asked where order 42 IS"
        assert second.answer is None and second.tool_calls == ["lookup_order"]
        assert [(e.kind, e.name, e.message) for e in second.errors] == [("tool", "lookup_order", "HTTP 503")]
        assert second.ended_at - second.started_at == pytest.approx(2.0)
        verdicts = [(v.evaluator, v.outcome, v.turn, v.turn_trace_id) for v in detail.results]
        assert verdicts == [
            ("user_rephrase", "fail", 2, tid(2)),
            ("human_handoff_request", "fail", 3, tid(3)),
            ("conversation_completion", "pass", None, None),
        ]
        assert all(v.trace_id == tid(3) for v in detail.results)  # the last turn's
        assert reader.session("no-such-conversation") is None
    finally:
        reader.close()  # type: ignore[attr-defined]


def test_session_of_trace(backend: Backend) -> None:
    seeded(backend)
    reader = backend.reader()
    try:
        assert reader.session_of_trace(tid(3)) == "conv-rephrase"  # by its session-level results
        assert reader.session_of_trace(tid(1)) == "conv-rephrase"  # by the session's turns
        assert reader.session_of_trace(tid(5)) == "conv-tie"  # a session without results
        assert reader.session_of_trace(tid(99)) is None
    finally:
        reader.close()  # type: ignore[attr-defined]


def test_a_database_before_sessions_has_none(backend: Backend) -> None:
    backend.at_version(4)
    reader = backend.reader()
    try:
        assert reader.sessions(SessionFilter(), 10).items == []
        assert reader.session("conv") is None
        assert reader.session_of_trace(tid(1)) is None
    finally:
        reader.close()  # type: ignore[attr-defined]
