"""What the traces of an offline run cost (`agent-monitor evaluate`, `compare`, `poll`): each trace's spend is the
sum of its LLM calls' costs (`evaluators.pricing.call_cost`: the span's own cost, else the genai-prices table or
the spec's `pricing.models` overrides), summarized over the traces with at least one priced call (as the
`agent_trace_cost_usd` histogram counts them); calls with usage and no known price are counted, never priced 0."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from evaluators.pricing import ModelPrice, call_cost
from evaluators.sdk.aggregations import percentile
from evaluators.traces.model import Trace
from monitor.text import usd


@dataclass(frozen=True, slots=True)
class SpendSummary:
    """Spend over a set of traces, in USD; the per-trace figures over the `priced_traces` (None without one)."""

    traces: int = 0
    priced_traces: int = 0  # traces with at least one priced call
    calls: int = 0  # LLM calls
    unpriced_calls: int = 0  # calls with usage and no known price
    total_usd: float = 0.0
    mean_usd: float | None = None
    p50_usd: float | None = None
    p95_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def trace_cost(trace: Trace, prices: Mapping[str, ModelPrice] | None = None) -> tuple[float | None, int, int]:
    """(the trace's cost in USD, None when no call was priced; its LLM calls; its unpriced calls)."""
    total: float | None = None
    calls = unpriced = 0
    for call in trace.get_llm_calls():
        calls += 1
        cost = call_cost(call, prices)
        if cost is not None:
            total = (total or 0.0) + cost.usd
        elif call.usage is not None:
            unpriced += 1
    return total, calls, unpriced


def spend_of(traces: Sequence[Trace], prices: Mapping[str, ModelPrice] | None = None) -> SpendSummary:
    """The SpendSummary of `traces`."""
    return spend_summary([trace_cost(trace, prices) for trace in traces])


def spend_summary(costs_of_traces: Sequence[tuple[float | None, int, int]]) -> SpendSummary:
    """The SpendSummary of traces given as their `trace_cost`s, in trace order."""
    costs: list[float] = []
    calls = unpriced = 0
    for cost, n, missing in costs_of_traces:
        calls += n
        unpriced += missing
        if cost is not None:
            costs.append(cost)
    total = math.fsum(costs)
    return SpendSummary(
        traces=len(costs_of_traces),
        priced_traces=len(costs),
        calls=calls,
        unpriced_calls=unpriced,
        total_usd=total,
        mean_usd=total / len(costs) if costs else None,
        p50_usd=percentile(costs, 50),
        p95_usd=percentile(costs, 95),
    )


def spend_line(spend: SpendSummary) -> str:
    """`spend: $0.0123 over 40 traces (38 priced); per trace mean $… p50 $… p95 $…; 2 unpriced calls of 120`."""
    if not spend.priced_traces:
        if not spend.calls:
            return "spend: no LLM calls"
        return f"spend: none priced ({spend.unpriced_calls} unpriced of {spend.calls} LLM calls)"
    return (
        f"spend: {usd(spend.total_usd)} over {spend.traces} traces ({spend.priced_traces} priced); per trace "
        f"mean {usd(spend.mean_usd)}, p50 {usd(spend.p50_usd)}, p95 {usd(spend.p95_usd)}; "
        f"{spend.unpriced_calls} unpriced of {spend.calls} LLM calls"
    )


def cost_ratio(baseline: SpendSummary, candidate: SpendSummary) -> float | None:
    """The candidate's mean cost per trace over the baseline's; None when a side has no priced trace or the
    baseline's mean is 0."""
    if baseline.mean_usd is None or candidate.mean_usd is None or baseline.mean_usd <= 0:
        return None
    return candidate.mean_usd / baseline.mean_usd


def ratio_line(baseline: SpendSummary, candidate: SpendSummary) -> str:
    """`cost per trace: candidate 2.00x the baseline (mean $0.002000 vs $0.001000)`, or why there is no ratio."""
    ratio = cost_ratio(baseline, candidate)
    if ratio is None:
        return "cost per trace: no ratio (a side has no priced trace, or the baseline cost nothing)"
    return (
        f"cost per trace: candidate {ratio:.2f}x the baseline "
        f"(mean {usd(candidate.mean_usd)} vs {usd(baseline.mean_usd)})"
    )
