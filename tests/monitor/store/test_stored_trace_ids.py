"""`stored_trace_ids` (the intake log's replay asks it which traces were stored before a restart): the ids of
those given that have a trace row, on SQLite and PostgreSQL, in chunks past one query's worth."""

from __future__ import annotations

import asyncio

from monitor.store.writer import STORED_IDS_CHUNK
from tests.monitor.store.test_store import outcome, row
from tests.support.backends import Backend


def test_the_store_says_which_of_the_trace_ids_it_has(backend: Backend) -> None:
    store = backend.store()

    async def scenario() -> set[str]:
        await store.start()
        store.write([outcome(f"{n:032x}", row("a", False)) for n in range(0, 2 * STORED_IDS_CHUNK + 10, 2)])
        store.flush()
        asked = [f"{n:032x}" for n in range(2 * STORED_IDS_CHUNK + 10)] + ["not-hex", f"{0:032x}"]
        try:
            return store.stored_trace_ids(asked)
        finally:
            await store.shutdown(5.0)

    assert asyncio.run(scenario()) == {f"{n:032x}" for n in range(0, 2 * STORED_IDS_CHUNK + 10, 2)}
