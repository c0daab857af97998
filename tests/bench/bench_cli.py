"""The command line's start-up (issue 29's bar: `agent-monitor --help` ≤ 0.3 s, `inspect one-file.json` ≤ 0.6 s).

Whole-process wall time, best of REPEATS, of the console script's code (`from monitor.cli import main`) in a fresh
interpreter of this tree, next to the bare interpreter's start-up (`python -c pass`) as a ratio: the ratio says
what the command adds, whatever the host's speed. The runs take turns, so the host's drift falls on all alike.

    python tests/bench/bench_cli.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ONE_FILE = ROOT / "tests/fixtures/corpus/oi_openai__tool_agent/traces_0001.json"
REPEATS = 15
SCRIPT = "import sys; from monitor.cli import main; sys.exit(main())"  # what the `agent-monitor` script runs
RUNS = {
    "python -c pass": ["-c", "pass"],
    "agent-monitor --help": ["-c", SCRIPT, "--help"],
    "agent-monitor inspect one-file.json": ["-c", SCRIPT, "inspect", str(ONE_FILE)],
}
TARGETS = {"agent-monitor --help": 0.3, "agent-monitor inspect one-file.json": 0.6}


def best_times(repeats: int = REPEATS) -> dict[str, float]:
    """The fastest whole-process wall time of each run, seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fastest = dict.fromkeys(RUNS, float("inf"))
    for _ in range(repeats):
        for name, argv in RUNS.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
            fastest[name] = min(fastest[name], time.perf_counter() - started)
    return fastest


def main() -> None:
    times = best_times()
    bare = times["python -c pass"]
    print(f"python -c pass: {bare * 1000:.0f} ms (best of {REPEATS})", flush=True)
    for name, target in TARGETS.items():
        took = times[name]
        verdict = "met" if took <= target else "NOT met"
        print(f"{name}: {took * 1000:.0f} ms = {took / bare:.1f}× bare start-up (target ≤ {target} s: {verdict})")


if __name__ == "__main__":
    main()
