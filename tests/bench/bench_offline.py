"""Offline `agent-monitor evaluate` over a few thousand trace files' worth of traces (issue 29: ≥ 2× amp-evaluation
on the same traces, which was 1.26–1.42× while `evaluate` ran in one process).

Whole-process wall time, best of REPEATS, of the console script's code on TRACES synthetic 7-span agent traces in
files of PER_FILE (protobuf and OTLP-JSON in turn), the default rules, no judges. Figures as ratios in one run:
- `--workers auto` over `--workers 1` (the cores' gain),
- each over the evaluation alone: TRACES ÷ `evaluation_baseline.single_thread_rate()` (decoded, assembled traces,
  the daemon's default evaluators, one thread), i.e. what the whole command costs per trace next to evaluating.
The runs take turns, so the host's drift falls on all alike.

    python tests/bench/bench_offline.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.evaluation_baseline import single_thread_rate  # noqa: E402
from tests.bench.trace_files import write_trace_files  # noqa: E402

TRACES = 3000
PER_FILE = 50
REPEATS = 3
SCRIPT = "import sys; from monitor.cli import main; sys.exit(main())"  # what the `agent-monitor` script runs


def best_times(folder: Path, runs: dict[str, list[str]]) -> dict[str, float]:
    """The fastest whole-process wall time of each run, seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fastest = dict.fromkeys(runs, float("inf"))
    for _ in range(REPEATS):
        for name, extra in runs.items():
            started = time.perf_counter()
            argv = [sys.executable, "-c", SCRIPT, "evaluate", str(folder), "--format", "json", *extra]
            done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
            if done.returncode not in (0, 1):
                raise RuntimeError(f"{name}: exit status {done.returncode}")
            fastest[name] = min(fastest[name], time.perf_counter() - started)
    return fastest


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        folder = Path(tmp)
        files = write_trace_files(folder, TRACES, PER_FILE)
        size = sum(f.stat().st_size for f in files)
        print(f"evaluate {TRACES:,} traces in {len(files)} files ({size / 1e6:.1f} MB), best of {REPEATS}", flush=True)
        times = best_times(folder, {"--workers 1": ["--workers", "1"], "--workers auto": []})
    alone = TRACES / single_thread_rate()
    one, auto = times["--workers 1"], times["--workers auto"]
    print(f"  evaluation alone, one thread     {alone:6.2f} s  ({TRACES / alone:,.0f} traces/s)")
    print(f"  evaluate --workers 1             {one:6.2f} s  = {one / alone:.2f}× evaluation alone")
    print(f"  evaluate --workers auto          {auto:6.2f} s  = {auto / alone:.2f}× evaluation alone")
    print(f"  --workers 1 ÷ --workers auto     {one / auto:.2f}  (the cores' gain, {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
