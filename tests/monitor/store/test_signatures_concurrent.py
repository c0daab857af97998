"""Two processes with a store each on one database (replicas on PostgreSQL; workers on SQLite) write the same new
failure signatures at the same moment, round after round: every count is exact, nothing is lost, and each
signature is counted new exactly once in total."""

from __future__ import annotations

import multiprocessing
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from monitor.store.health import StoreHealth
from tests.monitor.store.test_signatures_store import outcome, signature
from tests.support.backends import Backend

ROUNDS = 15
PER_ROUND = 6  # new signatures per round, each written by both processes
TIMEOUT = 120.0


def _replica(name: str, location: str, barrier: Barrier, offset: int, answers: Queue) -> None:
    """One process: a store of its own; each round, the same signatures as the other process, at the same time.
    Its news and the results its store lost, to `answers`."""
    health = StoreHealth(quiet=True)
    store = Backend(name, location).store(health=health)
    news: dict = {}
    try:
        for r in range(ROUNDS):
            sigs = [signature(f"tool{r}-{k}") for k in range(PER_ROUND)]
            sigs += [signature("hot")]  # one that every write updates
            if offset:
                sigs.reverse()  # another order: the store takes the rows in id order
            traces = [outcome(offset + r * 100 + k, sig) for k, sig in enumerate(sigs)]
            barrier.wait(TIMEOUT)
            store.write(traces)
            for key, count in store.news.take().items():
                news[key] = news.get(key, 0) + count
    finally:
        store.close()
    answers.put((news, health.take_report()[2]))


def _two_writers(backend: Backend) -> None:
    backend.store().close()  # the schema set up once, before the race
    context = multiprocessing.get_context("spawn")
    barrier, answers = context.Barrier(2), context.Queue()
    processes = [
        context.Process(target=_replica, args=(backend.name, backend.location, barrier, n * 10_000, answers))
        for n in (0, 1)
    ]
    for process in processes:
        process.start()
    try:
        (news_a, lost_a), (news_b, lost_b) = (answers.get(timeout=TIMEOUT * 2) for _ in processes)
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
    assert lost_a == {} and lost_b == {}
    total = news_a.get(("error_free", "shop"), 0) + news_b.get(("error_free", "shop"), 0)
    assert total == ROUNDS * PER_ROUND + 1  # every signature new once, whichever process wrote it first
    counts = dict(backend.rows("SELECT id, count FROM signatures"))
    assert counts.pop(signature("hot").id) == 2 * ROUNDS
    assert sorted(counts.values()) == [2] * (ROUNDS * PER_ROUND)
    assert backend.scalar("SELECT COUNT(*) FROM results WHERE signature IS NOT NULL") == 2 * ROUNDS * (PER_ROUND + 1)


def test_two_stores_at_once_count_each_new_signature_once(backend: Backend) -> None:
    _two_writers(backend)
