"""Review data of a canary rollout: traces of a baseline and a candidate variant (and some without one), their
results, and a pairwise judge's verdict on a candidate trace naming its baseline partner."""

from __future__ import annotations

import json

from monitor.review.models import ResultItem, TraceDetail
from tests.support.fake_reader import FakeReader, item, trace_detail

BASELINE, CANARY = "1.9.0", "2.0.0-canary"
PAIRWISE = "pairwise_quality"


def trace_ids(prefix: str, count: int = 3) -> list[str]:
    return [f"{prefix}{i:030x}" for i in range(count)]


BASELINE_TRACES, CANARY_TRACES, PLAIN_TRACES = trace_ids("ba"), trace_ids("ca"), trace_ids("0e", 1)
PAIRED = CANARY_TRACES[1]  # judged against BASELINE_TRACES[1]


def _trace(trace_id: str, variant: str, n: int, tool_fails: bool) -> TraceDetail:
    common = {"trace_id": trace_id, "variant": variant, "agent": "planner"}
    results: list[ResultItem] = [
        item(n, evaluator="tool_success_rate", outcome="fail" if tool_fails else "pass", **common),
        item(n, evaluator="latency", outcome="pass", score=1.0, **common),
    ]
    if trace_id == PAIRED:
        details = {"partner_trace_id": BASELINE_TRACES[1], "partner_variant": BASELINE, "order": "both"}
        results.append(
            item(n, evaluator=PAIRWISE, score=0.2, details=json.dumps(details), explanation="worse answer", **common)
        )
    detail = trace_detail(trace_id, results)
    return detail.model_copy(update={"summary": detail.summary.model_copy(update={"variant": variant})})


def canary_traces() -> list[TraceDetail]:
    """Baseline traces (the first fails tool_success_rate), canary traces (all fail it), one without a variant."""
    traces = [_trace(t, BASELINE, 10 + i, i == 0) for i, t in enumerate(BASELINE_TRACES)]
    traces += [_trace(t, CANARY, 20 + i, True) for i, t in enumerate(CANARY_TRACES)]
    traces += [_trace(t, "", 30 + i, False) for i, t in enumerate(PLAIN_TRACES)]
    return traces


def canary_reader() -> FakeReader:
    return FakeReader.of(canary_traces())
