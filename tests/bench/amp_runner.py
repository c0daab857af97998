"""amp-evaluation's side of tests/bench/bench_amp.py: run in amp-evaluation's own virtualenv, never in the project's.

    python amp_runner.py FOLDER EVALUATORS_JSON

Loads every `*.json` file of FOLDER with amp's `TraceLoader` (its reader of trace-service export files), parses
each trace with `parse_trace_for_evaluation` and evaluates them all with one `Monitor` run of the built-ins that
EVALUATORS_JSON names (`[[name, {param: value}], ...]`, each made with `builtin(name, **params)`): the steps
`Monitor.run()` takes itself with a trace fetcher, written out so that the evaluation alone can be timed. Prints
the run's summary, then `BENCH load_seconds=... evaluate_seconds=... traces=...`: the seconds from the files to
amp's `Trace` objects, and those of `Monitor.run(traces=...)` (every evaluator on every trace and the
aggregation of the scores).

Imports nothing of this project: only amp-evaluation and the standard library.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def evaluators_of(spec: list[list[Any]]) -> list[Any]:
    """The configured built-ins: `builtin(name, **params)` for each [name, params]."""
    from amp_evaluation import builtin  # type: ignore[import-not-found]  # amp's venv only

    return [builtin(name, **params) for name, params in spec]


def load(folder: Path) -> list[Any]:
    """amp's `Trace` objects of every export file in `folder`, in file order."""
    from amp_evaluation.trace import TraceLoader, parse_trace_for_evaluation  # type: ignore[import-not-found]

    traces: list[Any] = []
    for path in sorted(folder.glob("*.json")):
        traces.extend(parse_trace_for_evaluation(t) for t in TraceLoader(str(path)).load_traces())
    return traces


def main(argv: list[str]) -> int:
    folder, spec = Path(argv[0]), json.loads(argv[1])
    from amp_evaluation import Monitor

    monitor = Monitor(evaluators=evaluators_of(spec))
    started = time.perf_counter()
    traces = load(folder)
    loaded = time.perf_counter()
    result = monitor.run(traces=traces)
    evaluated = time.perf_counter()
    if result.errors or result.traces_evaluated != len(traces):
        print(f"amp-evaluation: {len(result.errors)} errors, first: {result.errors[:1]}", file=sys.stderr)
        return 1
    print(result.summary(verbosity="compact"))
    print(f"BENCH load_seconds={loaded - started:.6f} evaluate_seconds={evaluated - loaded:.6f} traces={len(traces)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
