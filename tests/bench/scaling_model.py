"""bench_scaling.py's last two parts: the Collector ring's figures, and the capacity model from the measured ones."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from monitor.store.writer import PRUNE_EVERY_SECONDS
from tests.bench.collector_ring import POSITIONS, WEIGHT, ring_changes, sampled_moved_share, split_traces
from tests.bench.synthetic import bench_trace_spans

RING_REPLICAS = [int(n) for n in os.environ.get("BENCH_SCALING_RING_REPLICAS", "1,2,3,4,6,8,12,16").split(",")]
RING_TRIALS = int(os.environ.get("BENCH_SCALING_RING_TRIALS", "100"))
QUIET_PERIOD = 5.0  # assembly.quiet_period's default
SPLIT_RATE = 1000.0  # traces/s in the split simulation
SPLIT_WINDOW = 120.0  # seconds of traces around the change
LONG_TRACE = 30.0  # seconds: a longer agent run, the bench trace's spans stretched to it
REPLICA_CORES = (1, 2, 4, 8)
STORE_TABLES = ("results", "traces", "sessions")  # what store.max_size counts (PostgreSQL)
GIB = 1024**3
PRUNE_EVERY = PRUNE_EVERY_SECONDS  # the retention by age runs this often


def bench_arrivals(stretch: float = 1.0) -> list[float]:
    """Seconds after the trace's start at which each span of a bench trace ends (is exported), optionally
    stretched to a longer run."""
    spans = bench_trace_spans(bytes(16), 0)
    first = min(s.start_time_unix_nano for s in spans)
    ends = [(s.end_time_unix_nano - first) / 1e9 for s in spans]
    return [e * stretch for e in ends]


def print_ring() -> None:
    print(f"\n5. Collector trace-ID load balancing: ring of {POSITIONS:,} positions, {WEIGHT} per endpoint (crc32), "
          f"{RING_TRIALS} random sets of pod addresses per N; share of trace ids that move")  # fmt: skip
    print(f"   {'N':>3} {'N->N+1: mean':>13} {'p5-p95':>13} {'1/(N+1)':>8} {'N->N-1: mean':>13} {'p5-p95':>13} "
          f"{'1/N':>6}  busiest replica x even share (mean, p95)")  # fmt: skip
    for n in RING_REPLICAS:
        c = ring_changes(n, RING_TRIALS, seed=n)
        inn = (f"{c.scale_in.mean:13.1%} {c.scale_in.p5:6.1%}-{c.scale_in.p95:<6.1%} {1 / n:6.1%}" if n > 1
               else f"{'-':>13} {'-':>13} {'-':>6}")  # fmt: skip
        print(f"   {n:>3} {c.scale_out.mean:13.1%} {c.scale_out.p5:6.1%}-{c.scale_out.p95:<6.1%} {1 / (n + 1):8.1%} "
              f"{inn}  {c.busiest.mean:.2f}, {c.busiest.p95:.2f}")  # fmt: skip
    sampled, exact = sampled_moved_share(3, 100_000, seed=1)
    print(f"   check: 100,000 random trace ids routed one by one, 3->4: {sampled:.2%} moved; over the positions "
          f"{exact:.2%}")  # fmt: skip
    print(f"   split at one change (N->N+1), {SPLIT_RATE:,.0f} traces/s, {SPLIT_WINDOW:g} s of traces around it; "
          f"formula: moved share x traces/s x arrival spread")  # fmt: skip
    for label, stretch in (("bench trace", 1.0), (f"{LONG_TRACE:g} s run", LONG_TRACE / max(bench_arrivals()))):
        for n in (2, 4, 8):
            s = split_traces(n, SPLIT_RATE, bench_arrivals(stretch), SPLIT_WINDOW, seed=n)
            print(f"   {label:<12} spread {s.spread:5.2f} s, {n}->{n + 1}: {s.split:6,} split of {s.traces:,} "
                  f"(formula {s.predicted:7,.0f}); bound with the quiet period ({QUIET_PERIOD:g} s): "
                  f"{s.moved * SPLIT_RATE * (s.spread + QUIET_PERIOD):7,.0f}")  # fmt: skip


@dataclass(frozen=True)
class Model:
    eval_cpu: dict[str, float]  # CPU ms per trace: "store off", "PostgreSQL store on"
    writes: dict[str, Any]  # label -> bench_scaling.Write
    ceiling: dict[str, Any]  # "all", "failing", "failing, no skips": CeilingPoint; "sweep": every point
    retention: dict[str, float]  # prune and vacuum server CPU ms per trace, prune wall ms per trace


MODES = ("all", "failing", "failing, no skips")


def print_model(m: Model) -> None:
    per_core = 1000 / m.eval_cpu["PostgreSQL store on"]
    best = m.ceiling["all"]
    print(f"\n6. capacity model: per core {per_core:,.0f} traces/s (evaluation with the store on), a replica = cores x "
          "that; the store's ceiling per mode: the host's cores over the CPU a trace's write takes (measured total "
          "in brackets; the host's other work slows only the latter)")  # fmt: skip
    ceilings = {mode: m.ceiling[mode].cpu_bound for mode in MODES}
    print("   ceiling: " + ", ".join(f"{mode} {ceilings[mode]:,.0f} ({m.ceiling[mode].traces_per_second:,.0f})"
                                   for mode in MODES) + " traces/s")  # fmt: skip
    print(f"   {'replica cores':<14}{'traces/s':>10}   replicas at the store's ceiling: {' / '.join(MODES)}")
    for cores in REPLICA_CORES:
        rate = per_core * cores
        at = [ceilings[mode] / rate for mode in MODES]
        print(f"   {cores:<14}{rate:>10,.0f}   {at[0]:6.1f} / {at[1]:6.1f} / {at[2]:6.1f}")
    used = best.server_cpu_ms + best.writer_cpu_ms
    extra = m.retention["prune_cpu_ms"] + m.retention["vacuum_cpu_ms"]
    prune_seconds = m.retention["prune_wall_ms"] * PRUNE_EVERY  # a prune's deletions at 1,000 traces/s
    print(f"   retention: prune + VACUUM {extra:.3f} server CPU ms per trace against {used:.3f} ms per trace written "
          f"(server + writers at the ceiling): {extra / used:.1%}; ceiling with it "
          f"{ceilings['all'] * used / (used + extra):,.0f} traces/s; at 1,000 traces/s it takes {extra:.1%} of a "
          f"server core, each prune (every {PRUNE_EVERY:g} s) {prune_seconds:.1f} s")  # fmt: skip
    print(f"   a dedicated server (estimate, not measured): {1000 / best.server_cpu_ms:,.0f} traces/s per server core "
          f"at {best.server_cpu_ms:.3f} server CPU ms per trace, if it scaled with cores")  # fmt: skip
    turns = m.writes["conversation turns"]
    ratio = turns.server_cpu_ms / m.writes["all"].server_cpu_ms
    with_turns = ceilings["all"] / (1 + ratio * best.server_cpu_ms / used)
    print(f"   conversation turns (sessions.shared): +{ratio:.0%} server CPU per trace over the trace's own write (one "
          f"writer); ceiling with them (estimate) {with_turns:,.0f} traces/s")  # fmt: skip
    for label in ("all", "failing", "failing, no skips"):
        w = m.writes[label]
        tables = sum(w.added.size.values()) / w.traces
        counted = sum(v for t, v in w.added.size.items() if t in STORE_TABLES) / w.traces
        wal = w.added.wal / w.traces
        print(f"   {label:<18} {tables * 1e6 / GIB:5.2f} GiB of tables and {wal * 1e6 / GIB:5.2f} GiB of WAL per "
              f"million traces; store.max_size 1 GiB holds {0.9 * GIB / counted:,.0f} traces")  # fmt: skip
