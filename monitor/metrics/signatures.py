"""Failure signatures: the signatures counted new (`agent_eval_failure_signatures_new_total`, and those counted new
within the new-signature alert's range, `agent_eval_failure_signatures_new_recent`) and those seen within
`signatures.window` (`agent_eval_failure_signatures_active`), by (evaluator, service), never by signature.

New is the result store's to decide (store/signatures.py: once per signature, whatever the replicas): its counts
come here through `new`, from the daemon's store (on its writer thread) and from the workers' stores (their
reports, beside the batches' tallies). With the store disabled (`decides_new`), a process-local memory of the
signatures seen decides instead: a signature is new when this process has seen it `min_count` times within the
window since its first sighting, once per memory (a daemon restarted, or another replica, counts it again; a
signature forgotten past `MAX_SIGNATURES` too).

The recent count is what lets `AgentEvalNewFailureSignature` fire on a Prometheus minutes old: the first new
signature of an (evaluator, service) creates the counter's series at 1, which `increase()` does not see grow, while
the gauge reads 1 at the first scrape. It is this process's memory (a restart forgets it; the rule's `increase()`
arm remembers what Prometheus saw grow before).

Active is computed at scrape time from the signatures the tallies carried (`apply_tally`): a bounded memory of
(evaluator, service, signature) → last seen, the least recently seen dropped past `MAX_SIGNATURES`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from monitor.metrics.recent_counts import RecentCounts
from monitor.metrics.tally import MetricsTally

MAX_SIGNATURES = 50_000  # signatures remembered (per memory); the least recently seen are dropped
Labels = Callable[[str, str], tuple[str, str]]  # raw (evaluator, service) → their label values, capped


class SignatureMetrics(Collector):
    """`new` (from the store), `apply_tally` (every tally), and the active gauge at scrape time."""

    def __init__(
        self,
        registry: CollectorRegistry,
        labels: Labels,
        *,
        window: float = 3600.0,
        min_count: int = 1,
        decides_new: bool = False,
        new_range: float | None = None,
        max_signatures: int = MAX_SIGNATURES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`labels`: the result metrics' label values of (evaluator, service) (sanitised, capped);
        `decides_new`: no store counts new signatures, this process does; `new_range`: the new-signature alert's
        range (`signatures.window` + its `for`; the window when not given), over which the recent gauge counts."""
        self.new_total = Counter(
            "agent_eval_failure_signatures_new",
            "Failure signatures counted new (first seen, reaching signatures.min_count within signatures.window).",
            ["evaluator", "service"],
            registry=registry,
        )
        self.recent_new = RecentCounts(window if new_range is None else new_range, clock)
        self._labels = labels
        self.window = window
        self.min_count = min_count
        self.decides_new = decides_new
        self.max_signatures = max_signatures
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, str, str], float] = OrderedDict()  # (labels..., id) → last seen
        self._first: OrderedDict[str, list] = OrderedDict()  # id → [first seen, count, counted] (decides_new)
        self._pairs: set[tuple[str, str]] = set()  # every (evaluator, service) seen: 0 once none is active (capped)
        registry.register(self)

    def new(self, evaluator: str, service: str, count: int = 1) -> None:
        """`count` signatures of (evaluator, service) counted new by a store (any thread)."""
        if count > 0:
            self._count_new(self._labels(evaluator, service), count)

    def _count_new(self, labels: tuple[str, str], count: int = 1) -> None:
        self.new_total.labels(*labels).inc(count)
        self.recent_new.add(labels, count)

    def apply_tally(self, tally: MetricsTally) -> None:
        """The signatures of a tally's failing results: seen now."""
        if not tally.signatures:
            return
        now = self._clock()
        new: list[tuple[str, str]] = []
        with self._lock:
            for (evaluator, service, sid), count in tally.signatures.items():
                key = (*self._labels(evaluator, service), sid)
                self._pairs.add(key[:2])
                self._seen[key] = now
                self._seen.move_to_end(key)
                if self.decides_new and self._first_new(sid, count, now):
                    new.append(key[:2])
            _bound(self._seen, self.max_signatures)
        for labels in new:
            self._count_new(labels)

    def _first_new(self, sid: str, count: int, now: float) -> bool:
        """Whether this process now counts `sid` new (lock held)."""
        entry = self._first.get(sid)
        if entry is None:
            entry = self._first[sid] = [now, 0, False]
            _bound(self._first, self.max_signatures)
        else:
            self._first.move_to_end(sid)
        entry[1] += count
        if entry[2] or entry[1] < self.min_count or now - entry[0] > self.window:
            return False
        entry[2] = True
        return True

    def active(self) -> dict[tuple[str, str], int]:
        """Distinct signatures seen within the window, by (evaluator, service) label values."""
        since = self._clock() - self.window
        with self._lock:
            counts = dict.fromkeys(self._pairs, 0)
            for (evaluator, service, _), seen in reversed(self._seen.items()):
                if seen < since:
                    break  # ordered by last sighting: the rest are older
                counts[(evaluator, service)] = counts.get((evaluator, service), 0) + 1
        return counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        active = GaugeMetricFamily(
            "agent_eval_failure_signatures_active",
            "Distinct failure signatures seen within signatures.window.",
            labels=["evaluator", "service"],
        )
        for (evaluator, service), count in sorted(self.active().items()):
            active.add_metric([evaluator, service], count)
        yield active
        recent = GaugeMetricFamily(
            "agent_eval_failure_signatures_new_recent",
            "Failure signatures this process counted new within signatures.window + the new-signature alert's for.",
            labels=["evaluator", "service"],
        )
        for labels, count in sorted(self.recent_new.counts().items()):
            recent.add_metric(list(labels), count)
        yield recent


def _bound(memory: OrderedDict, limit: int) -> None:
    while len(memory) > limit:
        memory.popitem(last=False)
