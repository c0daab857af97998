"""What pricing adds to the per-trace evaluation (issue 26's bar: at most 5%), measured alone.

The evaluation baseline's traces (evaluation_baseline.py: the default evaluators, cost_budget among them, over the
load generator's 7-span traces, whose LLM calls are gpt-4o-mini with usage): CPU time per trace with every call
priced as the daemon prices it (the spend metrics' `call_figures` and cost_budget, both through
`evaluators.pricing`), against the same evaluation with `price_call` answering a constant (no price lookup at all),
and against pricing each call with `genai_prices.calc_price` itself (what the table's fast path saves). Best of
REPEATS; CPU time, not wall time, because the benches share the host.

    python tests/bench/bench_pricing.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `python tests/bench/bench_pricing.py` (make bench)

import genai_prices

from evaluators import pricing
from monitor.config import MonitorConfig
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_evaluation import TraceEvaluator
from tests.bench.evaluation_baseline import bench_traces

REPEATS = 15


def best(work: Callable[[list], object], repeats: int = REPEATS) -> float:
    fastest = float("inf")
    for _ in range(repeats):
        traces = bench_traces()  # fresh records: the views are built anew, as in the daemon
        started = time.process_time()
        work(traces)
        fastest = min(fastest, time.process_time() - started)
    return fastest


def constant_price(model, usage, **_: object) -> pricing.CallPrice:
    return pricing.CallPrice(0.001, "price_table", str(model), "openai")


def library_price(model, usage, *, provider=None, when=None, overrides=None) -> pricing.CallPrice:
    plain, read, write, out = pricing._parts(usage)
    lib = genai_prices.Usage(input_tokens=plain + read + write, cache_read_tokens=read, output_tokens=out)
    calc = genai_prices.calc_price(lib, str(model), genai_request_timestamp=when)
    return pricing.CallPrice(float(calc.total_price), "price_table", calc.model.id, calc.provider.id)


def main() -> None:
    built, problems = build_evaluators(MonitorConfig().evaluator_entries())
    assert not problems, problems
    evaluator = TraceEvaluator(built)
    n = len(bench_traces())
    priced = best(evaluator.evaluate_batch)
    with mock.patch.object(pricing, "price_call", constant_price):
        unpriced = best(evaluator.evaluate_batch)
    with mock.patch.object(pricing, "price_call", library_price):
        library = best(evaluator.evaluate_batch, 5)
    calls = sum(1 for o in evaluator.evaluate_batch(bench_traces()) for _ in getattr(o, "calls", ()))
    print(
        f"evaluation {priced / n * 1e6:.0f} us/trace ({calls / n:.1f} LLM calls, each priced once for the spend "
        f"metrics and cost_budget); without price lookups {unpriced / n * 1e6:.0f} us/trace: pricing adds "
        f"{(priced - unpriced) / unpriced:.1%}; with genai_prices.calc_price per call it would add "
        f"{(library - unpriced) / unpriced:.1%}",
        flush=True,
    )


if __name__ == "__main__":
    main()
