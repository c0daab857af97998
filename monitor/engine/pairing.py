"""Pairing: a baseline's and a candidate's traces that answered the same input, for the pairwise judge.

Evaluation workers send a `PairOffer` for every trace that has pair keys (monitor/engine/variants.py) with
their batch's metrics tally. Here, in the daemon's process, a `PairingBook` per `variants.pairwise` entry
holds the unpaired traces of each side by key: when a trace arrives and a trace of the other side waits under
the same key, the two form a pair (the oldest waiting first, so first come first paired); a trace pairs at
most once per entry. A trace still unpaired `window` seconds after it arrived is given up (`no_pair`), and
beyond `max_waiting` unpaired traces the oldest is given up first, so memory stays bounded.

Plain bookkeeping on an injectable monotonic clock; the pairwise stage (pairwise_stage.py) judges the pairs.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import NamedTuple

from monitor.config.variants import PairwiseConfig


class PairOffer(NamedTuple):
    """An evaluated trace that may be paired: who it is, its variant, what it pairs on, and what it answered."""

    trace_id: str
    service: str
    variant: str
    pair_keys: tuple[tuple[str, str], ...]  # (pair_by, key), as TraceOutcome.pair_keys
    input: str | None  # bounded (TraceOutcome.input)
    output: str | None  # bounded


class Pair(NamedTuple):
    baseline: PairOffer
    candidate: PairOffer


class _Waiting(NamedTuple):
    offer: PairOffer
    side: str  # "baseline" or "candidate"
    key: str
    since: float


class PairingBook:
    """The unpaired traces of one `variants.pairwise` entry (see the module docstring)."""

    def __init__(self, entry: PairwiseConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.entry = entry
        self._clock = clock
        self._waiting: OrderedDict[str, _Waiting] = OrderedDict()  # by trace id, oldest first
        self._by_key: dict[tuple[str, str], deque[str]] = {}  # (side, key) → trace ids, oldest first
        self.paired = 0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def now(self) -> float:
        """The book's clock (the windows')."""
        return self._clock()

    def side_of(self, variant: str) -> str | None:
        if variant == self.entry.baseline:
            return "baseline"
        if variant == self.entry.candidate:
            return "candidate"
        return None

    def accepts(self, offer: PairOffer) -> bool:
        """Whether `offer` is for this entry: of one of its variants, with a key for its `pair_by`."""
        return self.side_of(offer.variant) is not None and self._key(offer) is not None

    def _key(self, offer: PairOffer) -> str | None:
        return dict(offer.pair_keys).get(self.entry.pair_by)

    def offer(self, offer: PairOffer, since: float | None = None) -> tuple[Pair | None, list[PairOffer]]:
        """The pair `offer` completes (None when it waits, or is not for this entry), and the traces given up to
        make room for it (beyond `max_waiting`); `since`: when it arrived on the book's clock (default now: an
        offer restored after a restart arrived earlier)."""
        side = self.side_of(offer.variant)
        key = self._key(offer)
        if side is None or key is None or offer.trace_id in self._waiting:
            return None, []
        other = "candidate" if side == "baseline" else "baseline"
        partners = self._by_key.get((other, key))
        if partners:
            partner = self._waiting.pop(partners.popleft()).offer
            if not partners:
                del self._by_key[(other, key)]
            self.paired += 1
            pair = Pair(offer, partner) if side == "baseline" else Pair(partner, offer)
            return pair, []
        dropped = []
        while len(self._waiting) >= self.entry.max_waiting:
            dropped.append(self._pop_oldest())
        self._waiting[offer.trace_id] = _Waiting(offer, side, key, self._clock() if since is None else since)
        self._by_key.setdefault((side, key), deque()).append(offer.trace_id)
        return None, dropped

    def expire(self) -> list[PairOffer]:
        """The traces that waited `window` without a partner, removed."""
        deadline = self._clock() - self.entry.window
        expired = []
        while self._waiting and next(iter(self._waiting.values())).since <= deadline:
            expired.append(self._pop_oldest())
        return expired

    def flush(self) -> list[PairOffer]:
        """Every waiting trace, removed (at shutdown)."""
        flushed = [w.offer for w in self._waiting.values()]
        self._waiting.clear()
        self._by_key.clear()
        return flushed

    def _pop_oldest(self) -> PairOffer:
        trace_id, waiting = self._waiting.popitem(last=False)
        index = (waiting.side, waiting.key)
        queue = self._by_key[index]
        # The oldest waiting trace is also the oldest under its key, so it is at the left of its queue.
        if queue[0] == trace_id:
            queue.popleft()
        else:  # never expected; kept consistent all the same
            queue.remove(trace_id)
        if not queue:
            del self._by_key[index]
        return waiting.offer
