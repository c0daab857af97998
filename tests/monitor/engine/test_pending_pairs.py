"""Pairwise offers kept in the result store across a restart (monitor/engine/pending.py), on SQLite and on a real
PostgreSQL server, at the stage level: a baseline trace offered before a shutdown pairs with a candidate trace
offered after the next start and the pair is judged; a pair being judged at the shutdown is judged by the next run,
once; an offer's `window` runs on across the restart (past it: the usual `no_pair` skip)."""

from __future__ import annotations

import asyncio
import json

from monitor.engine.judge_stage import JudgeStage
from monitor.engine.pairing import PairOffer
from monitor.engine.pairwise_stage import PairwiseStage
from monitor.engine.pending import PendingKeeper
from monitor.engine.pending_resume import PendingResumer
from monitor.store.writer import QueuedResultStore
from tests.monitor.engine.pairs import JUDGE, FakeJudgeModel, Recorder, offers, prefer, variants
from tests.support.backends import Backend

ENTRY = {"baseline": "1.4", "candidate": "1.5", "window": "10m"}
CONFIG = variants(ENTRY)
PENDING = "SELECT kind, payload FROM pending_judgements"
PAIRWISE = "SELECT trace_id, passed, skip_reason, details FROM results WHERE evaluator = 'pairwise_quality'"


class Held(FakeJudgeModel):
    """A judge model that answers once `release` is set."""

    def __init__(self, choose=None, hold: bool = False) -> None:
        super().__init__(choose)
        self.release = asyncio.Event()
        if not hold:
            self.release.set()

    async def __call__(self, judge, request, *, name):
        await self.release.wait()
        return await super().__call__(judge, request, name=name)


class Run:
    """One daemon run's pairwise stage on the store, with its keeper and its resumer."""

    def __init__(self, store: QueuedResultStore, model: FakeJudgeModel) -> None:
        self.recorder = Recorder()
        self.keeper = PendingKeeper(store, 30.0)
        self.stage = PairwiseStage(CONFIG.pairwise, {"pairwise_quality": JUDGE}, model, self.recorder.tallies.append,
                                   store.write, self.recorder.count_pair, keeper=self.keeper)  # fmt: skip
        judges = JudgeStage({}, model, self.recorder.tallies.append, store.write, keeper=self.keeper)
        self.resumer = PendingResumer(self.keeper, judges, self.stage, 3600.0)

    async def start(self) -> None:
        await self.stage.start()
        await self.resumer.start()


def opened(backend: Backend) -> QueuedResultStore:
    store = backend.store()
    store.start_writer()
    return store


def stopped_with(backend: Backend, model: FakeJudgeModel, *submitted: PairOffer) -> Run:
    """A run that is offered `submitted` and shut down before their judgement (its store closed)."""
    store = opened(backend)
    first = Run(store, model)

    async def scenario() -> None:
        await first.start()
        first.stage.submit(submitted)
        await asyncio.sleep(0.05)
        await first.stage.shutdown(0.05)
        await first.resumer.shutdown(1.0)  # as the daemon stops them: the stages, then the keeper

    asyncio.run(scenario())
    store.close()
    assert first.recorder.outcomes() == {}  # kept, not no_pair nor judge_unavailable skips
    return first


def restarted(backend: Backend, model: FakeJudgeModel, *submitted: PairOffer) -> tuple[Run, QueuedResultStore]:
    """The next run on the store: started (what was kept restored), then offered `submitted`, judged."""
    store = opened(backend)
    second = Run(store, model)

    async def scenario() -> None:
        await second.start()
        second.stage.submit(submitted)
        assert await second.stage.drain(5) == 0
        await second.stage.shutdown(0)
        await second.resumer.shutdown(1.0)

    asyncio.run(scenario())
    store.flush()
    return second, store


def traces() -> tuple[PairOffer, PairOffer]:
    return tuple(offers(CONFIG, ("1.4", "Weather in Paris?", "Sunny, 21 °C."), ("1.5", "weather in paris?", "Hm.")))


def test_a_pair_straddling_a_restart_is_judged(backend: Backend) -> None:
    baseline, candidate = traces()
    stopped_with(backend, FakeJudgeModel(), baseline)
    [(kind, payload)] = backend.rows(PENDING)
    assert kind == "pair_offer" and json.loads(payload)["trace_id"] == baseline.trace_id

    second, store = restarted(backend, FakeJudgeModel(prefer("Sunny, 21 °C.")), candidate)
    assert second.recorder.pairs == [("pairwise_quality", "1.4", "1.5", "loss")]
    [(trace_id, passed, skip, details)] = backend.rows(PAIRWISE)
    assert (trace_id, passed, skip) == (candidate.trace_id, 0, None)
    assert json.loads(details)["partner_trace_id"] == baseline.trace_id
    assert backend.rows(PENDING) == []  # both offers settled by the pair's result
    store.close()


def test_a_pair_being_judged_at_a_shutdown_is_judged_by_the_next_run_once(backend: Backend) -> None:
    baseline, candidate = traces()
    stopped_with(backend, Held(hold=True), baseline, candidate)
    assert len(backend.rows(PENDING)) == 2

    model = FakeJudgeModel(prefer("Sunny, 21 °C."))
    second, store = restarted(backend, model)
    assert len(model.requests) == 2  # the pair judged in both orders, once
    assert second.recorder.pairs == [("pairwise_quality", "1.4", "1.5", "loss")]
    assert [row[:3] for row in backend.rows(PAIRWISE)] == [(candidate.trace_id, 0, None)]
    assert backend.rows(PENDING) == []
    store.close()


def test_an_offers_window_runs_on_across_the_restart(backend: Backend) -> None:
    baseline, candidate = traces()
    stopped_with(backend, FakeJudgeModel(), baseline)
    backend.execute("UPDATE pending_judgements SET created_at = created_at - 601")  # its 10 minutes are up

    model = FakeJudgeModel()
    second, store = restarted(backend, model, candidate)
    assert model.requests == [] and second.recorder.pairs == []
    [(trace_id, passed, skip, details)] = backend.rows(PAIRWISE)
    assert (trace_id, passed, skip, json.loads(details)["why"]) == (baseline.trace_id, None, "no_pair", "expired")
    assert second.stage.waiting == 0  # the candidate, unpaired at the shutdown, is kept for the run after
    assert [json.loads(payload)["trace_id"] for _, payload in backend.rows(PENDING)] == [candidate.trace_id]
    store.close()
