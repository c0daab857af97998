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

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `python tests/bench/bench_pricing.py` (make bench)

import genai_prices

from evaluators import pricing
from evaluators.traces import build_trace
from monitor.config import MonitorConfig
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_evaluation import TraceEvaluator
from tests.bench.evaluation_baseline import bench_traces

REPEATS = 20


def interleaved(
    work: Callable[[list], object], arms: dict[str, Callable[[], object]], repeats: int
) -> dict[str, float]:
    """The best CPU time of `work` under each arm (a context manager factory), the arms taking turns in every round
    so that the host's drift and noise fall on all of them alike."""
    fastest = dict.fromkeys(arms, float("inf"))
    for _ in range(repeats):
        for name, arm in arms.items():
            traces = bench_traces()  # fresh records: the views are built anew, as in the daemon
            with arm():  # type: ignore[attr-defined]
                started = time.process_time()
                work(traces)
                fastest[name] = min(fastest[name], time.process_time() - started)
    return fastest


def pricing_alone(repeats: int = REPEATS) -> float:
    """Best CPU time of pricing every LLM call of the baseline's traces once (`call_cost`, nothing remembered)."""
    calls = [call for t in bench_traces() for call in build_trace(t.spans, t.trace_id).get_llm_calls()]
    for call in calls:
        _ = call.usage, call.metrics, call.provider, call.model  # the views' own work, done by the evaluators anyway
    fastest = float("inf")
    for _ in range(repeats):
        for call in calls:
            call.__dict__.pop("_call_cost", None)
        started = time.process_time()
        for call in calls:
            pricing.call_cost(call)
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
    arms = {
        "priced": contextlib.nullcontext,
        "unpriced": lambda: mock.patch.object(pricing, "price_call", constant_price),
    }
    times = interleaved(evaluator.evaluate_batch, arms, REPEATS)
    priced, unpriced = times["priced"], times["unpriced"]
    library_arm = {"library": lambda: mock.patch.object(pricing, "price_call", library_price)}
    library = interleaved(evaluator.evaluate_batch, library_arm, 3)["library"]
    calls = sum(1 for o in evaluator.evaluate_batch(bench_traces()) for _ in getattr(o, "calls", ()))
    alone = pricing_alone()
    print(
        f"evaluation {priced / n * 1e6:.0f} us/trace ({calls / n:.1f} LLM calls, each priced once for the spend "
        f"metrics and cost_budget); without price lookups {unpriced / n * 1e6:.0f} us/trace: pricing adds "
        f"{(priced - unpriced) / unpriced:.1%}; with genai_prices.calc_price per call it would add "
        f"{(library - unpriced) / unpriced:.1%}. Measured alone (the same calls priced by call_cost, less noisy): "
        f"{alone / n * 1e6:.1f} us/trace = {alone / unpriced:.1%} of the evaluation",
        flush=True,
    )


if __name__ == "__main__":
    main()
