"""Bench: the intake log's cost (issue 39), A/B against the log off in the same run. The default config (sync
`batch`) at saturation, its evaluated traces/s and the p99 latency of one export call (the load generator's),
against `intake.wal.enabled: false`; the runs alternate (off, on, off, on) so a drift of the host's speed hits both.

Targets: evaluated/s at most 5 % lower, export p99 at most 10 ms higher. BENCH_INTAKE_SECONDS: each run's length
(default 15); BENCH_INTAKE_ROUNDS: pairs of runs (default 2); BENCH_INTAKE_SYNC: the policy of the runs with the log
(default batch)."""

from __future__ import annotations

import os
import sys
from statistics import median

from tests.bench.bench_daemon import DEFAULT_QUIET, daemon_run, default_overrides, evaluated_per_second
from tests.bench.daemon_load import Broken, Run

SECONDS = float(os.environ.get("BENCH_INTAKE_SECONDS", "15"))
ROUNDS = int(os.environ.get("BENCH_INTAKE_ROUNDS", "2"))
SYNC = os.environ.get("BENCH_INTAKE_SYNC", "batch")  # the policy of the "on" runs
MAX_RATE_LOSS = 0.05
MAX_ADDED_P99 = 0.010


def _overrides(enabled: bool, sync: str = "batch") -> dict:
    return {**default_overrides(), "intake": {"wal": {"enabled": enabled, "sync": sync}}}


def _figures(runs: list[Run]) -> tuple[float, float]:
    """Median evaluated/s and median export-call p99 (s) of the runs."""
    return median(evaluated_per_second(r) for r in runs), median(r.load["latency_p99"] for r in runs)


def _report(run: Run) -> None:
    """One run's figures (the spread behind the medians)."""
    print(f"    {evaluated_per_second(run):8,.0f} evaluated/s, export p99 {run.load['latency_p99'] * 1000:6.1f} ms")


def main() -> int:
    off: list[Run] = []
    on: list[Run] = []
    try:
        for _ in range(ROUNDS):
            off.append(daemon_run("intake log off", _overrides(False), SECONDS, DEFAULT_QUIET))
            _report(off[-1])
            on.append(daemon_run(f"intake log on (sync: {SYNC})", _overrides(True, SYNC), SECONDS, DEFAULT_QUIET))
            _report(on[-1])
    except Broken as exc:
        print(f"bench_intake_log: BROKEN: {exc}", flush=True)
        return 1
    rate_off, p99_off = _figures(off)
    rate_on, p99_on = _figures(on)
    loss = 1 - rate_on / rate_off if rate_off > 0 else float("nan")
    added = p99_on - p99_off
    held = max(r.total("agent_monitor_intake_log_bytes") for r in on)
    syncs = sum(r.total("agent_monitor_intake_log_sync_seconds_count") for r in on)
    errors = sum(r.total("agent_monitor_intake_log_errors_total") for r in on)
    print(f"  evaluated/s   off {rate_off:8,.0f}   on {rate_on:8,.0f}   loss {loss:6.1%}  "
          f"(target <= {MAX_RATE_LOSS:.0%}): {'OK' if loss <= MAX_RATE_LOSS else 'MISSED'}")  # fmt: skip
    print(f"  export p99    off {p99_off * 1000:7.1f}ms  on {p99_on * 1000:7.1f}ms  added {added * 1000:6.1f}ms "
          f"(target <= {MAX_ADDED_P99 * 1000:.0f} ms): {'OK' if added <= MAX_ADDED_P99 else 'MISSED'}")  # fmt: skip
    print(f"  log on: {syncs:,.0f} syncs, {errors:,.0f} errors, {held / 2**20:,.1f} MiB held at the end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
