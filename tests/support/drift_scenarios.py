"""Synthetic agent traffic for drift scenarios in compressed time: a stationary agent with daily seasonality
(latency and traffic follow the hour of day), and the changes issue 41 names, each from `change_at` on.

Everything is drawn from a seeded generator, so a scenario is the same traffic on every run. A trace is a plain
dict with the fields of `tests/support/drift_rows.SyntheticTrace`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

DAY = 86400.0
EVALUATORS = ("answer_relevance", "tool_arguments_valid")


@dataclass(frozen=True)
class Scenario:
    """What changes at `change_at` (None: nothing; the stationary and the same-behaving-version scenarios)."""

    name: str
    signal: str | None  # the signal expected to drift ("" subject unless `subject`)
    subject: str = ""
    error_rate: float = 0.01
    response_factor: float = 1.0
    search_share: float = 0.95
    score_shift: float = 0.0
    cost_factor: float = 1.0
    variant: str = "1.4"


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("stationary", None),
        Scenario("error_rate_1_to_5_percent", "error_rate", error_rate=0.05),
        Scenario("response_length_doubled", "response_length", response_factor=2.0),
        Scenario("tool_no_longer_called", "tool_share", subject="search", search_share=0.0),
        Scenario("judge_score_down_0_1", "score", subject="answer_relevance", score_shift=-0.1),
        Scenario("cost_up_50_percent", "cost", cost_factor=1.5),
        Scenario("new_version_same_behaviour", None, variant="1.5"),
    )
}


def _hour_factor(at: float) -> float:
    """Daily seasonality: 1 ± 0.5 over the day (peak in the afternoon): the traffic, and the latency with it."""
    return 1.0 + 0.5 * math.sin(2 * math.pi * ((at % DAY) / DAY - 0.3))


def traces(
    scenario: Scenario,
    *,
    start: float,
    end: float,
    change_at: float,
    per_minute: float = 10.0,
    agents: tuple[str, ...] = ("planner",),
    service: str = "shop",
    seed: int = 41,
) -> Iterator[dict]:
    """The traces of `agents` from `start` to `end`: `per_minute` each on average (more in the afternoon)."""
    rng = random.Random(seed)
    stationary = Scenario("before", None)
    minute = start
    while minute < end:
        for agent in agents:
            count = _poisson(rng, per_minute * _hour_factor(minute))
            for _ in range(count):
                at = minute + rng.random() * 60.0
                now = scenario if at >= change_at else stationary
                yield _trace(rng, now, at, service, agent)
        minute += 60.0


def _poisson(rng: random.Random, mean: float) -> int:
    # Knuth's method is fine for means near 10 (tests only).
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _trace(rng: random.Random, s: Scenario, at: float, service: str, agent: str) -> dict:
    tools = ["search"] if rng.random() < s.search_share else []
    if rng.random() < 0.3:
        tools.append("lookup_order")
    tool_calls = len(tools) + (1 if tools and rng.random() < 0.2 else 0)
    failures = sum(1 for _ in range(tool_calls) if rng.random() < 0.03)
    llm_calls = 1 + tool_calls + (1 if rng.random() < 0.3 else 0)
    tokens = int(rng.lognormvariate(math.log(400 * llm_calls), 0.3))
    score = min(1.0, max(0.0, rng.betavariate(8.6, 1.4) + s.score_shift))
    return {
        "created_at": at,
        "service": service,
        "agent": agent,
        "variant": s.variant,
        "has_error": rng.random() < s.error_rate,
        "llm_calls": llm_calls,
        "tool_calls": tool_calls,
        "tool_failures": failures,
        "tools": tuple(tools),
        "response_chars": int(rng.lognormvariate(math.log(180 * s.response_factor), 0.35)),
        "tokens": tokens,
        "cost_usd": tokens * 2.5e-6 * s.cost_factor,
        "duration_ms": rng.lognormvariate(math.log(2500 * _hour_factor(at)), 0.3),  # slower at the peak
        "verdicts": (
            ("answer_relevance", score >= 0.7, score),
            ("tool_arguments_valid", rng.random() < 0.98, None),
        ),
    }
