"""Waiting judgements kept in the result store (schema version 9, monitor/engine/pending.py), on SQLite and on a real
PostgreSQL server: a judgement is kept when submitted (a refused one is not), forgotten with its result, left kept by
a shutdown that did not finish it (and not counted), and done by the next run once, through the same stage; one
older than `judges.pending_max_age` is an expired skip, and beyond `max_pending` the backlog's skip. With PostgreSQL a
replica never adopts a live replica's judgements, and adopts those of one that is gone."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

from evaluators.judges import JudgeRequest, LLMJudge
from evaluators.sdk import EvalResult
from monitor.engine.judge_stage import EXPIRED, JudgeStage
from monitor.engine.pending import PendingKeeper
from monitor.engine.pending_resume import PendingResumer
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import JudgeJob
from monitor.store.writer import QueuedResultStore
from tests.support.backends import Backend

PENDING = "SELECT id, kind, owner, payload FROM pending_judgements ORDER BY created_at"
JUDGED = "SELECT trace_id, skip_reason, explanation FROM results WHERE evaluator = 'j' ORDER BY trace_id"
LEASE = 30.0


class Judge(LLMJudge):
    name = "kept_judge"
    level = "trace"

    def build_prompt(self, subject, task=None):
        return "prompt"


def job(n: int) -> JudgeJob:
    request = JudgeRequest("sys", f"judge answer {n}, from ann@corp.example")
    return JudgeJob(f"{n:032x}", "svc", "j", "trace", "ab" * 8, None, None, request, "v1", "1.0")


class Model:
    """The judge engine's `judge`: fails every answer, or waits until `release` is set; keeps every request."""

    def __init__(self, hold: bool = False) -> None:
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        self.requests: list[JudgeRequest] = []

    async def __call__(self, judge, request, *, name):
        self.requests.append(request)
        await self.release.wait()
        return EvalResult(0.1, explanation="judged").resolve(judge.threshold)


class Run:
    """One daemon run's judge stage on the store: its own keeper (owner), its tallies."""

    def __init__(self, store: QueuedResultStore, model: Model, **kwargs) -> None:
        self.tallies: list[MetricsTally] = []
        self.keeper = PendingKeeper(store, LEASE)
        self.stage = JudgeStage({"j": Judge()}, model, self.tallies.append, store.write, keeper=self.keeper, **kwargs)
        self.resumed: dict[tuple[str, str], int] = {}

    def resumer(self, max_age: float = 3600.0) -> PendingResumer:
        count = lambda kind, outcome, n: self.resumed.__setitem__((kind, outcome), n)  # noqa: E731
        return PendingResumer(self.keeper, self.stage, None, max_age, count)

    def counted(self) -> int:
        return sum(c.passed + c.failed + sum(c.skips.values()) for t in self.tallies for c in t.results.values())


def opened(backend: Backend) -> QueuedResultStore:
    store = backend.store()
    store.start_writer()
    return store


def stopped_run(store: QueuedResultStore, *jobs: JudgeJob) -> Run:
    """A run whose judge model never answers, given `jobs` and shut down: they stay kept, none counted."""
    run = Run(store, Model(hold=True))

    async def stopped() -> None:
        run.stage.submit(list(jobs))
        await run.stage.shutdown(0.05)

    asyncio.run(stopped())
    return run


def test_a_judgement_is_kept_until_its_result_is_written_masked_and_a_refused_one_is_not(backend: Backend) -> None:
    store = opened(backend)
    model = Model(hold=True)
    run = Run(store, model, max_pending=1)

    async def scenario() -> list[tuple]:
        run.stage.submit([job(1), job(2)])  # the second over max_pending: refused, not kept
        await asyncio.sleep(0)
        store.flush()
        kept = backend.rows(PENDING)
        model.release.set()
        assert await run.stage.drain(5) == 0
        return kept

    kept = asyncio.run(scenario())
    store.flush()
    assert [(kind, owner) for _, kind, owner, _ in kept] == [("judgement", run.keeper.owner)]
    payload = json.loads(kept[0][3])
    assert payload["trace_id"] == f"{1:032x}" and payload["variant"] == "v1" and payload["version"] == "1.0"
    assert "ann@corp.example" not in payload["prompt"] and payload["prompt"].startswith("judge answer 1")
    assert backend.rows(PENDING) == []  # forgotten with its result
    assert [row[:2] for row in backend.rows(JUDGED)] == [(f"{1:032x}", None), (f"{2:032x}", "rate_limited")]
    store.close()


def test_a_shutdown_keeps_what_it_did_not_finish_and_the_next_run_does_it_once(backend: Backend) -> None:
    store = opened(backend)
    first = stopped_run(store, job(1), job(2))
    store.close()
    assert first.counted() == 0  # not a judge_unavailable skip: kept for the next start
    kept = backend.rows(PENDING)
    assert len(kept) == 2 and backend.rows(JUDGED) == []

    store = opened(backend)
    model = Model()
    second = Run(store, model)

    async def resumed() -> None:
        resumer = second.resumer()
        await resumer.start()
        assert await second.stage.drain(5) == 0
        await resumer.shutdown(0)

    asyncio.run(resumed())
    store.flush()
    assert sorted(r.prompt for r in model.requests) == sorted(json.loads(payload)["prompt"] for *_, payload in kept)
    assert {r.system for r in model.requests} == {"sys"}
    assert second.resumed == {("judgement", "resumed"): 2} and second.counted() == 2
    assert backend.rows(PENDING) == []
    assert [row[:2] for row in backend.rows(JUDGED)] == [(f"{1:032x}", None), (f"{2:032x}", None)]

    third = Run(store, Model())  # a third run finds nothing left: each stored once
    assert asyncio.run(third.resumer().adopt()) == 0 and len(backend.rows(JUDGED)) == 2
    store.close()


def test_a_kept_judgement_too_old_is_an_expired_skip_and_beyond_max_pending_the_backlog_skip(backend: Backend) -> None:
    store = opened(backend)
    stopped_run(store, job(1), job(2), job(3))
    store.flush()
    backend.execute(
        "UPDATE pending_judgements SET created_at = ? WHERE payload LIKE ?", (time.time() - 7200, "%answer 1%")
    )
    model = Model()
    second = Run(store, model, max_pending=1)

    async def resumed() -> None:
        await second.resumer(max_age=3600).adopt()
        assert await second.stage.drain(5) == 0

    asyncio.run(resumed())
    store.flush()
    assert [r.prompt.split(",")[0] for r in model.requests] == ["judge answer 2"]  # the oldest that may still go
    assert backend.rows(JUDGED) == [
        (f"{1:032x}", "judge_unavailable", EXPIRED),
        (f"{2:032x}", None, "judged"),
        (f"{3:032x}", "rate_limited", "judge backlog full (1 judgements wait: judges.max_pending)"),
    ]
    assert second.resumed == {("judgement", "resumed"): 1, ("judgement", "expired"): 1} and second.counted() == 3
    assert backend.rows(PENDING) == []
    store.close()


def test_postgres_replicas_never_adopt_a_live_replicas_judgements_and_adopt_a_gone_ones_once(postgres_url) -> None:
    backend = Backend("postgres", postgres_url)
    stores = [opened(backend) for _ in range(3)]
    alive = Run(stores[0], Model(hold=True))

    async def holding() -> None:
        await alive.resumer().adopt()  # at its start: nothing to adopt, its heartbeat written
        alive.stage.submit([job(1), job(2)])
        await asyncio.sleep(0)
        stores[0].flush()

    asyncio.run(holding())
    others = [PendingKeeper(store, LEASE) for store in stores[1:]]
    assert [keeper.adopt() for keeper in others] == [[], []]  # the first replica is alive: its rows stay its own
    assert {owner for _, _, owner, _ in backend.rows(PENDING)} == {alive.keeper.owner}

    # the first replica stops heartbeating (gone): its rows are adopted, by one replica only, even at once
    backend.execute("UPDATE pending_owners SET seen_at = seen_at - ? WHERE owner = ?", (2 * LEASE, alive.keeper.owner))
    with ThreadPoolExecutor(2) as pool:
        adopted = list(pool.map(lambda keeper: keeper.adopt(), others))
    assert sorted(len(rows) for rows in adopted) == [0, 2]
    adopter = others[0] if adopted[0] else others[1]
    assert {owner for _, _, owner, _ in backend.rows(PENDING)} == {adopter.owner}
    assert [len(keeper.adopt()) for keeper in others] == [0, 0]  # the adopter is alive now
    for store in stores:
        store.close()


def test_a_resumed_judgement_asked_again_in_the_same_run_is_judged_and_stored_once(backend: Backend) -> None:
    """The intake log's replay may evaluate a trace again (with `results: failing` a passing trace is not stored, so
    the replay does not know it): its judgement, resumed already, is not asked for twice."""
    store = opened(backend)
    stopped_run(store, job(1))
    model = Model()
    second = Run(store, model)

    async def resumed() -> None:
        await second.resumer().adopt()
        second.stage.submit([job(1), job(2)])  # the replay's evaluation of trace 1 again, and a new trace
        assert await second.stage.drain(5) == 0

    asyncio.run(resumed())
    store.flush()
    assert sorted(r.prompt.split(",")[0] for r in model.requests) == ["judge answer 1", "judge answer 2"]
    assert [row[0] for row in backend.rows(JUDGED)] == [f"{1:032x}", f"{2:032x}"] and second.counted() == 2
    assert backend.rows(PENDING) == []
    store.close()


def test_a_kept_row_that_does_not_read_back_is_forgotten_and_the_others_resumed(backend: Backend) -> None:
    store = opened(backend)
    stopped_run(store, job(1))
    store.flush()
    insert = "INSERT INTO pending_judgements (id, kind, created_at, owner, payload) VALUES (?, ?, ?, ?, ?)"
    backend.execute(insert, ("broken", "judgement", time.time(), "gone", '{"trace_id": "x"}'))
    backend.execute(insert, ("unknown", "a_later_kind", time.time(), "gone", "{}"))
    model = Model()
    second = Run(store, model)

    async def resumed() -> None:
        assert await second.resumer().adopt() == 1
        assert await second.stage.drain(5) == 0

    asyncio.run(resumed())
    store.flush()
    assert len(model.requests) == 1 and [row[0] for row in backend.rows(JUDGED)] == [f"{1:032x}"]
    assert backend.rows(PENDING) == []
    store.close()


def test_rows_adopted_while_the_stage_shuts_down_stay_kept_not_skipped(backend: Backend) -> None:
    """A replica's heartbeat may adopt a gone replica's rows while its own judge stage is stopping: they are not
    refused as "shutting down" skips, they stay kept for whoever starts next."""
    store = opened(backend)
    stopped_run(store, job(1))
    store.flush()
    second = Run(store, Model())

    async def stopping() -> int:
        await second.stage.shutdown(0)
        return await second.resumer().adopt()

    assert asyncio.run(stopping()) == 0
    store.flush()
    assert second.counted() == 0 and backend.rows(JUDGED) == [] and len(backend.rows(PENDING)) == 1
    store.close()
