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

from tests.bench.bench_daemon import DEFAULT_QUIET, daemon_run, default_overrides, eval_share, evaluated_per_second
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
