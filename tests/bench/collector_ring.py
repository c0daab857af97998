"""The OpenTelemetry Collector's `loadbalancing` exporter's trace-ID routing, re-implemented for bench_scaling.py.

Its placement rule (exporter/loadbalancingexporter/consistent_hashing.go in opentelemetry-collector-contrib):
a ring of 36,000 positions; each endpoint (the DNS resolver's `ip:port` strings, sorted) gets 100 of them,
`crc32_ieee(endpoint + byte(i)) % 36000` for i in 0..99, a position already taken by an endpoint earlier in the
sorted list staying with that one; a span goes to the endpoint at the first ring position at or after
`crc32_ieee(the 16 trace-id bytes) % 36000`, wrapping round to the first. Only the measurement uses this copy:
the daemon never routes.

Every trace id lands on one of the 36,000 positions, uniformly (crc32 of random ids), so the share of trace ids
that move when the endpoints change is the share of positions whose owner changes: counted exactly, over every
position, for random pod addresses.
"""

from __future__ import annotations

import os
import random
import zlib
from dataclasses import dataclass
from statistics import mean, quantiles

import numpy as np

POSITIONS = 36_000  # maxPositions: 360 degrees with two decimals
WEIGHT = 100  # defaultWeight: ring positions per endpoint
PORT = 4317


def ring_of(endpoints: list[str]) -> tuple[np.ndarray, list[str]]:
    """The ring: its positions (ascending) and the endpoint at each."""
    taken: dict[int, str] = {}
    for endpoint in sorted(endpoints):  # the resolver sorts them; the first to take a position keeps it
        for i in range(WEIGHT):
            taken.setdefault(zlib.crc32(endpoint.encode() + bytes([i])) % POSITIONS, endpoint)
    ordered = sorted(taken)
    return np.array(ordered, dtype=np.int64), [taken[p] for p in ordered]


def owners(endpoints: list[str], keys: np.ndarray | None = None) -> np.ndarray:
    """The index (into sorted `endpoints`) of the owner of each key position (default: every position)."""
    keys = np.arange(POSITIONS) if keys is None else keys
    positions, at = ring_of(endpoints)
    index = {e: n for n, e in enumerate(sorted(endpoints))}
    item = np.searchsorted(positions, keys, side="left")  # the first ring position >= the key's
    item[item == len(positions)] = 0  # past the last: round to the first
    return np.array([index[e] for e in at], dtype=np.int64)[item]


def endpoint_for(trace_id: bytes, endpoints: list[str]) -> str:
    """The endpoint one trace id goes to (one lookup, as the exporter makes it)."""
    key = np.array([zlib.crc32(trace_id) % POSITIONS])
    return sorted(endpoints)[int(owners(endpoints, key)[0])]


def pod_addresses(count: int, rng: random.Random) -> list[str]:
    """`count` distinct pod endpoints as the DNS resolver returns them (`10.a.b.c:4317`)."""
    found: set[str] = set()
    while len(found) < count:
        found.add(f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}:{PORT}")
    return sorted(found)


def moved_share(before: list[str], after: list[str]) -> float:
    """The share of trace ids whose endpoint differs between the two rings."""
    a, b = sorted(before), sorted(after)
    names_a, names_b = np.array(a)[owners(a)], np.array(b)[owners(b)]
    return float(np.mean(names_a != names_b))


def busiest_share(endpoints: list[str]) -> float:
    """The busiest endpoint's share of the trace ids times their count (1.0: an even split)."""
    counts = np.bincount(owners(endpoints), minlength=len(endpoints))
    return float(counts.max() / POSITIONS * len(endpoints))


@dataclass(frozen=True)
class Spread:
    mean: float
    p5: float
    p95: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        cuts = quantiles(values, n=20, method="inclusive")
        return cls(mean(values), cuts[0], cuts[-1])


@dataclass(frozen=True)
class RingChange:
    """Over `trials` random sets of pod addresses with `replicas` endpoints."""

    replicas: int
    scale_out: Spread  # moved share going to replicas + 1
    scale_in: Spread  # moved share going to replicas - 1 (one endpoint removed at random)
    busiest: Spread  # busiest endpoint's load over an even split


def ring_changes(replicas: int, trials: int, seed: int) -> RingChange:
    rng = random.Random(seed)
    out, inn, busy = [], [], []
    for _ in range(trials):
        pods = pod_addresses(replicas + 1, rng)
        rng.shuffle(pods)
        now, added = pods[:replicas], pods
        out.append(moved_share(now, added))
        busy.append(busiest_share(now))
        if replicas > 1:
            gone = rng.choice(now)
            inn.append(moved_share(now, [p for p in now if p != gone]))
    return RingChange(replicas, Spread.of(out), Spread.of(inn) if inn else Spread(1.0, 1.0, 1.0), Spread.of(busy))


def sampled_moved_share(replicas: int, ids: int, seed: int) -> tuple[float, float]:
    """(moved share counted over random trace ids routed one by one, the exact share over the positions) for one
    N → N+1 change: the check that position counting is what the per-id rule gives."""
    rng = random.Random(seed)
    pods = pod_addresses(replicas + 1, rng)
    before = pods[:replicas]
    keys = np.array([zlib.crc32(os.urandom(16)) % POSITIONS for _ in range(ids)])
    a, b = np.array(sorted(before))[owners(before, keys)], np.array(sorted(pods))[owners(pods, keys)]
    return float(np.mean(a != b)), moved_share(before, pods)


@dataclass(frozen=True)
class Splits:
    """One change of N -> N+1 endpoints while traces start at a steady rate over `window` seconds around it."""

    traces: int  # traces that started within the window
    split: int  # of those: spans on both sides of the change, and the trace moved
    moved: float  # the ring's moved share
    spread: float  # seconds from a trace's first span arriving to its last (the same for every trace here)
    window: float

    @property
    def predicted(self) -> float:
        """The formula: moved share x rate x spread (the traces straddling the change, of them those that moved)."""
        return self.moved * self.traces / self.window * self.spread


def split_traces(replicas: int, rate: float, arrivals: list[float], seconds: float, seed: int) -> Splits:
    """Traces starting uniformly over `seconds` centred on a change N → N+1, each with its spans arriving at
    `arrivals` (seconds after its start): a trace is split when some of its spans arrive before the change and
    some after, and its trace id moved (its first part stays with the old replica, the rest goes to the new)."""
    rng = random.Random(seed)
    pods = pod_addresses(replicas + 1, rng)
    rng.shuffle(pods)
    before, after = pods[:replicas], pods
    count = int(rate * seconds)
    keys = np.array([zlib.crc32(rng.randbytes(16)) % POSITIONS for _ in range(count)])
    moved = np.array(sorted(before))[owners(before, keys)] != np.array(sorted(after))[owners(after, keys)]
    starts = np.array([rng.uniform(-seconds / 2, seconds / 2) for _ in range(count)])
    straddles = (starts + min(arrivals) < 0) & (starts + max(arrivals) >= 0)
    return Splits(count, int(np.sum(moved & straddles)), moved_share(before, after),
                  max(arrivals) - min(arrivals), seconds)  # fmt: skip
