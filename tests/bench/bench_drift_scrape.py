"""Benchmark: what the drift series (monitor/metrics/drift.py) add to a scrape.

Two exporters hold the same results: 50 agents (5 services x 10 agents), each judged by 5 evaluators at trace and
agent level, with traces; one also holds a drift report of the 50 agents x 20 signals (1,000 signals: 8 series
each, the baseline, recent, both directions of the change, active, since and both windows' samples), a tenth of
them active. Prints the /metrics render time of each (classic text and OpenMetrics), interleaved, and their ratio;
and what `publish` (preparing a report's samples, on the drift job's thread) takes. Each figure is the median of
ROUNDS (the host's other load hits both).

    python -m tests.bench.bench_drift_scrape
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from monitor.detection.model import BaselineKind, Direction, DriftReport, Moments, SignalKind, SignalState
from monitor.detection.signals import SIGNALS
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import ResultRow

SERVICES = [f"service_{i}" for i in range(5)]
AGENTS = [f"agent_{i}" for i in range(10)]
EVALUATORS = [f"evaluator_{i}" for i in range(5)]
SIGNALS_PER_AGENT = 20
TRACES_PER_AGENT = 40
ROUNDS = 25
OPENMETRICS = "application/openmetrics-text"


def add_results(m: MetricsExporter, rng: random.Random) -> None:
    """Every agent's traces, each with the evaluators' trace- and agent-level results."""
    tally = MetricsTally()
    for service in SERVICES:
        for agent in AGENTS:
            for n in range(TRACES_PER_AGENT):
                trace_id = f"{rng.getrandbits(128):032x}"
                tally.add_trace(service, rng.random() * 5, n % 10 == 0, trace_id)
                rows = [
                    result_row(agent if level == "agent" else None, evaluator, level, rng.random())
                    for evaluator in EVALUATORS
                    for level in ("trace", "agent")
                ]
                tally.add_results(service, trace_id, rows)
    m.results.apply_tally(tally)


def result_row(agent: str | None, evaluator: str, level: str, score: float) -> ResultRow:
    return ResultRow(None, agent, None, evaluator, level, score, score < 0.9, None, None, None, 0.001)


BASELINE = Moments(n=5000, total=4850.0, squares=4850.0)
RECENT = Moments(n=300, total=270.0, squares=270.0)


def signals_of(service: str, agent: str, rng: random.Random) -> list[SignalState]:
    """20 signals of one agent: the evaluators' pass ratios and scores, then the trace signals with a tool."""
    names = [("pass_ratio", e) for e in EVALUATORS] + [("score", e) for e in EVALUATORS]
    names += [(s, "") for s in ("error_rate", "tool_success", "llm_calls", "tool_calls", "response_length", "tokens",
                                "cost", "latency")]  # fmt: skip
    names += [("tool_share", "search"), ("tool_share", "book")]
    states = []
    for name, subject in names[:SIGNALS_PER_AGENT]:
        signal = SIGNALS[name]
        active = rng.random() < 0.1
        quality = signal.kind is SignalKind.QUALITY
        fields = dict(service=service, agent=agent, signal=name, subject=subject, kind=signal.kind,
                      statistic=signal.statistic, scale=signal.scale, baseline_kind=BaselineKind.SAME_HOURS,
                      baseline=BASELINE, recent=RECENT, p_value=0.4, q_value=0.7)  # fmt: skip
        if active:
            fields.update(effect=-0.07, p_value=0.001, q_value=0.004, significant=True, direction=Direction.DOWN,
                          worse=True if quality else None, since=1_700_000_000.0)  # fmt: skip
        states.append(SignalState.model_validate(fields))
    return states


def drift_report(rng: random.Random) -> DriftReport:
    signals = [s for service in SERVICES for agent in AGENTS for s in signals_of(service, agent, rng)]
    return DriftReport(as_of=1_700_003_600.0, recent_seconds=1800.0, signals=signals, tested=len(signals))


def render_seconds(m: MetricsExporter, accept: str | None) -> float:
    started = time.perf_counter()
    m.render(accept)
    return time.perf_counter() - started


def main() -> None:
    plain, drifted = MetricsExporter(), MetricsExporter()
    for m in (plain, drifted):
        add_results(m, random.Random(7))
    report = drift_report(random.Random(11))
    publishes = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        drifted.drift.publish(report, duration=1.0)
        publishes.append(time.perf_counter() - started)
    agents = len(SERVICES) * len(AGENTS)
    print(f"drift: /metrics render, {agents} agents x {len(EVALUATORS)} evaluators; drift report of "
          f"{agents} agents x {SIGNALS_PER_AGENT} signals ({len(report.signals)})")  # fmt: skip
    for title, accept in (("classic text", None), ("OpenMetrics", OPENMETRICS)):
        times: dict[str, list[float]] = {"plain": [], "drifted": []}
        for _ in range(ROUNDS):
            for name, m in (("plain", plain), ("drifted", drifted)):
                times[name].append(render_seconds(m, accept))
        base, with_drift = statistics.median(times["plain"]), statistics.median(times["drifted"])
        size = len(plain.render(accept)[0]), len(drifted.render(accept)[0])
        print(f"  {title}:")
        print(f"    without drift series    {1000 * base:8.1f} ms  {size[0] / 1024:8.0f} KiB (median of {ROUNDS})")
        print(f"    with drift series       {1000 * with_drift:8.1f} ms  {size[1] / 1024:8.0f} KiB")
        print(f"    ratio                   {with_drift / base:8.2f}x")
    print(f"  publish (the drift job's thread): {1000 * statistics.median(publishes):.1f} ms per report")


if __name__ == "__main__":
    main()
