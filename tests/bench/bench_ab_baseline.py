"""Bench: this tree's daemon against a fixed baseline commit's (issue 40), the same load, alternating.

The baseline (BENCH_BASELINE_REF, default ea3cc99: the daemon of a month before) is extracted with `git archive`
into .cache/bench-baseline/<sha>/src and installed, runtime dependencies only, into its own venv beside it (built
once, reused while its stamp matches; baseline_tree.py). Each round runs the baseline's daemon, then this tree's,
under the same load: this tree's load generator (load_generator.py: 7-span agent traces, 4 requests of 50 traces in
flight, as fast as accepted) for BENCH_AB_SECONDS (default 20), then waits for the daemon to catch up; BENCH_AB_ROUNDS
rounds (default 3) so that a drift of the host's speed hits both. Each daemon runs its own tree's embedded default
config: no config file, only the ports, the 127.0.0.1 hosts, the store path and the shutdown grace period set through
AGENT_MONITOR_* variables, which both trees read.

Printed per run and as medians, with the ratios current / baseline: evaluated traces/s (from the first trace due to
the last evaluated), the daemon process tree's CPU share of the host's cores (from the first trace due to send end)
and its CPU ms per evaluated trace (send start until caught up). Figures, not targets: exits 0 unless a daemon
broke (or the baseline cannot be had: its ref missing from this clone, an install failing).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.baseline_tree import ROOT, BaselineError, BaselineTree, imported_from, prepare
from tests.bench.bench_daemon import (
    CORES,
    DEFAULT_QUIET,
    default_overrides,
    eval_share,
    evaluated_per_second,
    evaluating_cpu_share,
    lost,
)
from tests.bench.daemon_load import Broken, Run, run_daemon
from tests.integration.daemon_process import DaemonProcess

REF = os.environ.get("BENCH_BASELINE_REF", "ea3cc99")
ROUNDS = int(os.environ.get("BENCH_AB_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_AB_SECONDS", "20"))


@dataclass(frozen=True)
class Figures:
    """One run's figures, or the medians of several."""

    evaluated_per_second: float
    cpu_share: float  # of all usable cores, 0..1
    cpu_ms_per_trace: float


@dataclass(frozen=True)
class Side:
    """A daemon to bench: its label, the interpreter that runs it and the tree it imports `monitor` from."""

    label: str
    python: Path
    tree: Path

    def env(self) -> dict[str, str]:
        """PYTHONPATH on the side's tree: its `monitor`, whatever this process's environment points at."""
        return {"PYTHONPATH": str(self.tree)}

    def daemon(self, workdir: Path, overrides: dict[str, Any]) -> DaemonProcess:
        return DaemonProcess(workdir, overrides, self.env(), python=self.python, config_in_env=True)

    def check(self) -> None:
        """Broken unless the side's interpreter imports `monitor` from the side's tree."""
        env = {**os.environ, **self.env()}
        with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
            found = imported_from(self.python, env, Path(tmp))
        if found != self.tree.resolve():
            raise Broken(f"{self.label}: {self.python} imports monitor from {found}, not {self.tree}")


def figures_of(run: Run) -> Figures:
    return Figures(evaluated_per_second(run), evaluating_cpu_share(run), eval_share(run)[1])


def medians(runs: list[Figures]) -> Figures:
    """The median of each figure over the runs (NaN ones left out; NaN when none is left)."""

    def middle(values: list[float]) -> float:
        kept = [v for v in values if not math.isnan(v)]
        return median(kept) if kept else math.nan

    return Figures(
        middle([r.evaluated_per_second for r in runs]),
        middle([r.cpu_share for r in runs]),
        middle([r.cpu_ms_per_trace for r in runs]),
    )


def _ratio(current: float, baseline: float) -> float:
    return current / baseline if baseline and not math.isnan(baseline) else math.nan


def ratios(current: Figures, baseline: Figures) -> Figures:
    """current / baseline, figure by figure (NaN where the baseline's is 0 or NaN)."""
    return Figures(
        _ratio(current.evaluated_per_second, baseline.evaluated_per_second),
        _ratio(current.cpu_share, baseline.cpu_share),
        _ratio(current.cpu_ms_per_trace, baseline.cpu_ms_per_trace),
    )


def run_line(label: str, figures: Figures) -> str:
    return (
        f"    {label:<22}{figures.evaluated_per_second:>8,.0f} evaluated/s  CPU {100 * figures.cpu_share:4.0f}% of "
        f"{CORES} cores  {figures.cpu_ms_per_trace:6.3f} CPU ms/trace"
    )


def _rounds(count: int) -> str:
    return f"{count} round" + ("" if count == 1 else "s")


def summary_lines(baseline_label: str, baseline: list[Figures], current: list[Figures]) -> list[str]:
    """The medians of each side over its runs and their ratios current / baseline, as a small table."""
    base, cur = medians(baseline), medians(current)
    ratio = ratios(cur, base)
    rows = [
        ("evaluated traces/s", f"{base.evaluated_per_second:,.0f}", f"{cur.evaluated_per_second:,.0f}",
         ratio.evaluated_per_second),
        (f"CPU share of {CORES} cores", f"{100 * base.cpu_share:.0f}%", f"{100 * cur.cpu_share:.0f}%",
         ratio.cpu_share),
        ("CPU ms per evaluated trace", f"{base.cpu_ms_per_trace:.3f}", f"{cur.cpu_ms_per_trace:.3f}",
         ratio.cpu_ms_per_trace),
    ]  # fmt: skip
    header = f"  {'medians of ' + _rounds(len(current)):<30}{baseline_label:>18}{'current':>12}"
    lines = [header + f"{'current/baseline':>20}"]
    lines += [f"  {name:<30}{b:>18}{c:>12}{r:>19.2f}x" for name, b, c, r in rows]
    return lines


def _current_label() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    return f"{head.stdout.strip() or '?'}{' + uncommitted changes' if dirty.stdout.strip() else ''}"


def one_run(side: Side) -> tuple[Run, Figures]:
    print(f"  running: {side.label} ({SECONDS:g} s)", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        run = run_daemon(Path(tmp), default_overrides(), SECONDS, DEFAULT_QUIET, make_daemon=side.daemon)
    figures = figures_of(run)
    print(
        run_line(side.label, figures) + f"  (accepted {run.load['traces_per_second']:,.0f} traces/s, "
        f"{'caught up' if run.caught_up else 'gave up waiting'}, lost {lost(run):,.0f})",
        flush=True,
    )
    return run, figures


def main() -> int:
    try:
        tree: BaselineTree = prepare(REF)
    except BaselineError as exc:
        print(f"bench_ab_baseline: NO BASELINE: {exc}", flush=True)
        return 1
    baseline = Side(f"baseline {REF}", tree.python, tree.src)
    current = Side("current", Path(sys.executable), ROOT)
    print(f"  baseline {REF} = {tree.sha[:12]}, its own venv ({tree.python.parent.parent.relative_to(ROOT)})")
    print(f"  current  {_current_label()}; {_rounds(ROUNDS)} of {SECONDS:g} s each, baseline first", flush=True)
    results: dict[str, list[Figures]] = {baseline.label: [], current.label: []}
    try:
        for side in (baseline, current):
            side.check()
        for number in range(1, ROUNDS + 1):
            print(f"  round {number}/{ROUNDS}", flush=True)
            for side in (baseline, current):
                results[side.label].append(one_run(side)[1])
    except (Broken, BaselineError) as exc:
        print(f"bench_ab_baseline: BROKEN: {exc}", flush=True)
        return 1
    for line in summary_lines(baseline.label, results[baseline.label], results[current.label]):
        print(line)
    print("  (a shared host's speed moves from one minute to the next: the rounds alternate, the medians and the CPU")
    print("   per trace are the steadier figures)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
