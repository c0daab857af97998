"""The daemon's pollers: one per enabled source, with the checkpoints of the result store (or of the process
when the store is disabled: then a restart starts again at now - backfill, said once in the log), and the leases
that make one replica at a time poll each source when replicas share a PostgreSQL store."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from monitor.config.models import MonitorConfig
from monitor.config.sources import PhoenixSourceConfig
from monitor.consumer import PollSink
from monitor.metrics.poll import PollMetrics
from monitor.sources.base import Leases, SpanFeed, TraceSource
from monitor.sources.checkpoints import CheckpointStore, MemoryCheckpoints, StoreCheckpoints
from monitor.sources.phoenix.annotations import PhoenixAnnotations
from monitor.sources.phoenix.result_annotations import PhoenixWriteBack
from monitor.sources.runner import Poller

if TYPE_CHECKING:
    from monitor.sources.phoenix.result_annotations import StoredResults
    from monitor.store.writer import QueuedResultStore

log = logging.getLogger(__name__)


def build_pollers(
    config: MonitorConfig,
    sources: tuple[TraceSource | SpanFeed, ...],
    store: QueuedResultStore | None,
    sink: PollSink,
    metrics: PollMetrics,
    judges: Collection[str] = (),
    reader_of: Callable[[QueuedResultStore], StoredResults] | None = None,
    leases: Leases | None = None,
) -> list[Poller]:
    """`judges`: the labels of the LLM judges (Phoenix write-back tells them apart); `reader_of`: the review reader
    of the store (write-back reads the stored results back through it; None: no write-back); `leases`: which
    sources this replica polls (None: every one, as with SQLite)."""
    entries = [entry for entry in config.sources if entry.enabled]
    if not entries:
        return []
    checkpoints: CheckpointStore
    if store is not None:
        checkpoints = StoreCheckpoints(store)
    else:
        checkpoints = MemoryCheckpoints()
        log.warning("store.enabled is false: poll checkpoints are kept in memory only (a restart reads again "
                    "from now - backfill)")  # fmt: skip
    pollers = []
    for entry, source in zip(entries, sources, strict=True):
        write_back = None
        if isinstance(entry, PhoenixSourceConfig) and entry.write_back:
            if store is None or reader_of is None:
                log.warning("sources.%s.write_back needs the result store (store.enabled: false): not written back",
                            entry.name)  # fmt: skip
            else:
                write_back = PhoenixWriteBack(PhoenixAnnotations(entry), store, reader_of, set(judges))
        pollers.append(Poller(entry, source, checkpoints, sink, metrics, after_evaluated=write_back,
                              max_spans_per_trace=config.assembly.max_spans_per_trace, leases=leases))  # fmt: skip
    return pollers
