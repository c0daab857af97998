"""Bench: the intake log's cost (issue 39), A/B against the log off in the same run. The default config (sync
`batch`) at saturation (its evaluated traces/s, CPU per trace, the export p99), then at a fixed, paced load of
FIXED_SHARE of the saturated rate (the p99 latency of one export call, the load generator's), against
`intake.wal.enabled: false`; the runs alternate (off, on, off, on) so a drift of the host's speed hits both.

Targets: evaluated/s at saturation at most 5 % lower, export p99 at the fixed load at most 10 ms higher (at
saturation the loop's queue amplifies any added work into the tail: printed, not the bound). BENCH_INTAKE_SECONDS:
each run's length (default 15); BENCH_INTAKE_ROUNDS: pairs of runs at saturation (default 2);
BENCH_INTAKE_FIXED_ROUNDS: pairs at the fixed load (default: as many); BENCH_INTAKE_SYNC: the policy of the runs
with the log (default batch)."""

from __future__ import annotations

import os
import sys
from statistics import median

from tests.bench.bench_daemon import (
    DEFAULT_QUIET,
    FIXED_SHARE,
    daemon_run,
    default_overrides,
    eval_share,
    evaluated_per_second,
)
from tests.bench.daemon_load import Broken, Run

SECONDS = float(os.environ.get("BENCH_INTAKE_SECONDS", "15"))
ROUNDS = int(os.environ.get("BENCH_INTAKE_ROUNDS", "2"))
FIXED_ROUNDS = int(os.environ.get("BENCH_INTAKE_FIXED_ROUNDS", str(ROUNDS)))  # pairs at a fixed, paced load
SYNC = os.environ.get("BENCH_INTAKE_SYNC", "batch")  # the policy of the "on" runs
MAX_RATE_LOSS = 0.05
MAX_ADDED_P99 = 0.010


def _overrides(enabled: bool, sync: str = "batch") -> dict:
    return {**default_overrides(), "intake": {"wal": {"enabled": enabled, "sync": sync}}}


def _figures(runs: list[Run]) -> tuple[float, float]:
    """Median evaluated/s and median export-call p99 (s) of the runs."""
    return median(evaluated_per_second(r) for r in runs), median(r.load["latency_p99"] for r in runs)


def _cpu_per_trace(runs: list[Run]) -> float:
    """Median CPU ms of the daemon's process tree per evaluated trace: less moved by other work on the host than
    a rate or a latency, so it shows the log's own cost where the wall-clock figures are noise."""
    return median(eval_share(r)[1] for r in runs)


def _main_us_per_request(runs: list[Run]) -> float:
    """Median CPU µs of the receiving (main) process per export request: where the log's append runs."""
    return median(1e6 * r.cpu_main_send / max(r.load["requests_ok"], 1) for r in runs)


def _report(run: Run) -> None:
    """One run's figures (the spread behind the medians)."""
    print(f"    {evaluated_per_second(run):8,.0f} evaluated/s, export p99 {run.load['latency_p99'] * 1000:6.1f} ms, "
          f"{eval_share(run)[1]:5.2f} CPU ms/trace")  # fmt: skip


def _pairs(label: str, rounds: int, rate: float = 0.0) -> tuple[list[Run], list[Run]]:
    """`rounds` pairs of runs, the log off then on; `rate`: traces/s paced (0: as fast as accepted)."""
    off: list[Run] = []
    on: list[Run] = []
    for _ in range(rounds):
        off.append(daemon_run(f"intake log off, {label}", _overrides(False), SECONDS, DEFAULT_QUIET, rate))
        _report(off[-1])
        on.append(
            daemon_run(f"intake log on (sync: {SYNC}), {label}", _overrides(True, SYNC), SECONDS, DEFAULT_QUIET, rate)
        )
        _report(on[-1])
    return off, on


def main() -> int:
    try:
        off, on = _pairs("saturation", ROUNDS)
        rate_off, p99_off = _figures(off)
        fixed_off, fixed_on = _pairs(
            f"fixed load ({FIXED_SHARE:.0%} of saturation)", FIXED_ROUNDS, FIXED_SHARE * rate_off
        )
    except Broken as exc:
        print(f"bench_intake_log: BROKEN: {exc}", flush=True)
        return 1
    rate_on, p99_on = _figures(on)
    loss = 1 - rate_on / rate_off if rate_off > 0 else float("nan")
    held = max(r.total("agent_monitor_intake_log_bytes") for r in on)
    syncs = sum(r.total("agent_monitor_intake_log_sync_seconds_count") for r in on)
    errors = sum(r.total("agent_monitor_intake_log_errors_total") for r in on)
    print(f"  evaluated/s   off {rate_off:8,.0f}   on {rate_on:8,.0f}   loss {loss:6.1%}  "
          f"(target <= {MAX_RATE_LOSS:.0%}): {'OK' if loss <= MAX_RATE_LOSS else 'MISSED'}")  # fmt: skip
    print(f"  export p99 at saturation   off {p99_off * 1000:7.1f}ms  on {p99_on * 1000:7.1f}ms  added "
          f"{(p99_on - p99_off) * 1000:6.1f}ms (a saturated loop's queueing amplifies any added work)")  # fmt: skip
    p99_fixed_off, p99_fixed_on = (median(r.load["latency_p99"] for r in runs) for runs in (fixed_off, fixed_on))
    added = p99_fixed_on - p99_fixed_off
    verdict = "OK" if added <= MAX_ADDED_P99 else "MISSED"
    print(f"  export p99 at fixed load   off {p99_fixed_off * 1000:7.1f}ms  on {p99_fixed_on * 1000:7.1f}ms  added "
          f"{added * 1000:6.1f}ms (target <= {MAX_ADDED_P99 * 1000:.0f} ms): {verdict}")  # fmt: skip
    cpu_off, cpu_on = _cpu_per_trace(off), _cpu_per_trace(on)
    print(f"  CPU/trace     off {cpu_off:7.2f}ms  on {cpu_on:7.2f}ms  ratio {cpu_on / cpu_off:5.3f} "
          "(the tree's CPU per evaluated trace: less moved by the host's noise than the rates)")  # fmt: skip
    main_off, main_on = _main_us_per_request(off), _main_us_per_request(on)
    print(f"  main process  off {main_off:7.0f}µs on {main_on:7.0f}µs per request, added {main_on - main_off:5.0f} µs "
          "(the receiving process's CPU per export request, where the log's append runs)")  # fmt: skip
    print(f"  log on: {syncs:,.0f} syncs, {errors:,.0f} errors, {held / 2**20:,.1f} MiB held at the end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
