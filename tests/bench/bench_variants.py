"""Benchmark: the cost of live variant comparisons at scrape time.

Two exporters hold the same results (5 evaluators x 2 versions, full windows of 10,000 results each, scores
included); one also compares each evaluator's versions (variants.compare). Prints the /metrics render time of
each, interleaved, and their ratio: what the comparisons (two-proportion test, interval, Mann-Whitney on 20,000
scores each) add to a scrape. Twice: scrapes of unchanged windows (a comparison's state is kept while no result
enters or leaves its windows), then scrapes with new results in between (every window changed: each comparison's
rank sums patched with the 200 results per side that entered and the 200 that left, as with a scrape every 15 s
under traffic). Each figure is the median of ROUNDS interleaved renders (the host's other load hits both).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from monitor.config.variants import VariantsConfig
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import ResultRow

EVALUATORS = [f"evaluator_{i}" for i in range(5)]
PER_SIDE = 10_000
ROUNDS = 15


NEW_PER_SCRAPE = 200  # results per evaluator and version between two scrapes (windows stay full: the oldest go)


def add(m: MetricsExporter, rng: random.Random, per_side: int) -> None:
    """`per_side` results of each evaluator and version: version 1.5 passes less often than 1.4."""
    for version, pass_rate in (("1.4", 0.95), ("1.5", 0.9)):
        tally = MetricsTally()
        rows = []
        for evaluator in EVALUATORS:
            for _ in range(per_side):
                score = rng.random()
                rows.append(ResultRow(None, None, None, evaluator, "trace", score, score < pass_rate, None, None,
                                      None, 0.001))  # fmt: skip
        tally.add_results("svc", "0" * 31 + "1", rows, version)
        m.results.apply_tally(tally)


def filled(variants: VariantsConfig | None) -> MetricsExporter:
    m = MetricsExporter(variants=variants, window_sample_cap=PER_SIDE)
    add(m, random.Random(7), PER_SIDE)
    return m


def render_seconds(m: MetricsExporter) -> float:
    started = time.perf_counter()
    m.render(None)
    return time.perf_counter() - started


def measure(plain: MetricsExporter, compared: MetricsExporter, new_results: int) -> tuple[float, float]:
    """Median render times (plain, compared), interleaved (a slow moment of the host hits both), with
    `new_results` per evaluator and version added to both before each render (not timed)."""
    rng = random.Random(11)
    times: dict[str, list[float]] = {"plain": [], "compared": []}
    for _ in range(ROUNDS):
        for name, m in (("plain", plain), ("compared", compared)):
            if new_results:
                add(m, rng, new_results)
            times[name].append(render_seconds(m))
    return statistics.median(times["plain"]), statistics.median(times["compared"])


def main() -> None:
    compare = [{"evaluator": e, "baseline": "1.4", "candidate": "1.5", "min_samples": 100} for e in EVALUATORS]
    variants = VariantsConfig.model_validate({"attribute": "service.version", "compare": compare})
    plain, compared = filled(None), filled(variants)
    print(f"variants: /metrics render, {len(EVALUATORS)} evaluators x 2 versions x {PER_SIDE} results")
    for title, new_results in (
        ("unchanged windows between scrapes", 0),
        (f"{NEW_PER_SCRAPE} new results per evaluator and version between scrapes", NEW_PER_SCRAPE),
    ):
        base, with_compare = measure(plain, compared, new_results)
        print(f"  {title}:")
        print(f"    without comparisons     {1000 * base:8.1f} ms (median of {ROUNDS})")
        print(f"    with {len(compare)} comparisons      {1000 * with_compare:8.1f} ms")
        print(f"    ratio                   {with_compare / base:8.2f}x  (the comparisons' share of a scrape)")


if __name__ == "__main__":
    main()
