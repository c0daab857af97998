"""A completed conversation waiting for its session-level LLM judges is kept in the result store across a restart
(monitor/sessions/judging.py, monitor/engine/pending.py), on SQLite and on a real PostgreSQL server: a shutdown
leaves it kept, with its turns (their texts masked), and the next run judges it once from what was kept; its result
and the removal of what was kept go in one write; one kept too long is an expired skip."""

from __future__ import annotations

import asyncio
import json

from evaluators.judges import LLMJudge
from evaluators.sdk import EvalResult
from evaluators.sessions import Session, Turn, TurnError
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.judge_stage import JudgeStage
from monitor.engine.pending import EXPIRED, PendingKeeper
from monitor.engine.pending_resume import PendingResumer
from monitor.sessions.judging import SessionJudging
from monitor.sessions.storing import session_writer
from monitor.store.writer import QueuedResultStore
from tests.support.backends import Backend

PENDING = "SELECT kind, payload FROM pending_judgements"
JUDGED = "SELECT session_id, trace_id, passed, skip_reason, explanation FROM results WHERE evaluator = 'goal_met'"


class GoalMet(LLMJudge):
    name = "goal_met"
    level = "session"
    instructions = "Was the user's goal met?"

    def build_prompt(self, session: Session, task: object = None) -> str:
        return " / ".join(f"{t.user_message} -> {t.answer} {[e.message for e in t.errors]}" for t in session.turns)


JUDGES = {"goal_met": GoalMet()}


def conversation() -> Session:
    first = Turn("a" * 32, 1_000, 2_000, "book a table, mail me at ann@corp.example", "booked", ("book",),
                 input_tokens=10, output_tokens=5, cost_usd=0.01, service="shop")  # fmt: skip
    failed = (TurnError("tool", "pay", "card 4111 1111 1111 1111 refused", "http_402"),)
    second = Turn("b" * 32, 3_000, 4_000, "and pay", "could not pay", ("pay",), failed, ("host",), service="shop")
    session = Session("conv-1", [first, second], "session.id", "idle", 0)
    session.completed_at = 1_700_000_000.0
    return session


class Model:
    def __init__(self, hold: bool = False) -> None:
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        self.prompts: list[str] = []

    async def __call__(self, judge, request, *, name):
        self.prompts.append(request.prompt)
        await self.release.wait()
        return EvalResult(0.0, explanation="goal not met").resolve(judge.threshold)


class Run:
    def __init__(self, store: QueuedResultStore, model: Model) -> None:
        self.keeper = PendingKeeper(store, 30.0)
        self.tallies: list = []
        self.judging = SessionJudging(model, self.tallies.append, on_judged=session_writer(store.write),
                                      keeper=self.keeper)  # fmt: skip
        stage = JudgeStage({}, model, self.tallies.append, store.write, keeper=self.keeper)
        self.resumer = PendingResumer(self.keeper, stage, None, 3600.0, sessions=(self.judging, JUDGES))


def opened(backend: Backend) -> QueuedResultStore:
    store = backend.store()
    store.start_writer()
    return store


def stopped(backend: Backend) -> None:
    """A run whose conversation is completed, its judge holding the reply, and shut down (the store closed)."""
    store = opened(backend)
    first = Run(store, Model(hold=True))

    async def scenario() -> None:
        first.judging(conversation(), [ConfiguredEvaluator(JUDGES["goal_met"], "goal_met")])
        await asyncio.sleep(0.02)
        await first.judging.drain(0.05)

    asyncio.run(scenario())
    store.close()
    assert first.tallies == []  # not judged, not counted


def test_a_session_waiting_for_its_judges_at_a_shutdown_is_judged_once_by_the_next_run(backend: Backend) -> None:
    stopped(backend)
    [(kind, payload)] = backend.rows(PENDING)
    assert kind == "session" and "ann@corp.example" not in payload and "4111 1111" not in payload
    assert json.loads(payload)["labels"] == ["goal_met"]

    store = opened(backend)
    model = Model()
    second = Run(store, model)

    async def scenario() -> None:
        await second.resumer.start()
        await second.judging.drain(5)

    asyncio.run(scenario())
    store.flush()
    [prompt] = model.prompts
    assert "book a table" in prompt and "could not pay" in prompt and "refused" in prompt  # the kept turns
    assert backend.rows(JUDGED) == [("conv-1", "b" * 32, 0, None, "goal not met")]  # on its last turn, once
    assert backend.rows(PENDING) == []
    assert second.judging.judged == 1
    store.close()


def test_a_session_kept_too_long_is_an_expired_skip(backend: Backend) -> None:
    stopped(backend)
    backend.execute("UPDATE pending_judgements SET created_at = created_at - 7200")
    store = opened(backend)
    model = Model()
    second = Run(store, model)
    asyncio.run(second.resumer.start())
    store.flush()
    assert model.prompts == []
    assert backend.rows(JUDGED) == [("conv-1", "b" * 32, None, "judge_unavailable", EXPIRED)]
    assert backend.rows(PENDING) == []
    store.close()
