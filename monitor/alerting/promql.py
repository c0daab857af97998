"""PromQL text helpers for the generated rules: durations, numbers, string literals and series selectors."""

from __future__ import annotations

from decimal import Decimal

RESULTS = "agent_eval_results_total"
BY = "sum by (evaluator, service)"
VERDICTS = 'outcome=~"pass|fail"'
FAILS = 'outcome="fail"'

_UNITS = (("d", 86400_000), ("h", 3600_000), ("m", 60_000), ("s", 1000), ("ms", 1))


def duration(seconds: float) -> str:
    """A Prometheus duration: 90 → "1m30s", 2592000 → "30d", 0.25 → "250ms" (rounded to the millisecond)."""
    left = round(seconds * 1000)
    if left <= 0:
        return "0s"
    parts = []
    for unit, size in _UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def number(value: float) -> str:
    """A short, exact-looking PromQL number: 0.9 → "0.9", 14.4 → "14.4", 3.3600000000000003 → "3.36"."""
    return f"{value:.10g}"


def complement(ratio: float) -> str:
    """1 - ratio in decimal arithmetic (1 - 0.995 → "0.005", never 0.0050000000000000044)."""
    return str(Decimal(1) - Decimal(repr(ratio)))


def string(value: str) -> str:
    """A double-quoted PromQL string literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def select(metric: str, *matchers: str, extra: str = "") -> str:
    """`metric{m1,m2,extra}`; `extra` is the config's alerting.selector (matchers without braces)."""
    inner = ",".join([*matchers, *([extra] if extra else [])])
    return f"{metric}{{{inner}}}" if inner else metric


def results(evaluator: str, outcome: str, extra: str = "") -> str:
    """The results counter of one evaluator with an outcome matcher (FAILS or VERDICTS)."""
    return select(RESULTS, f"evaluator={string(evaluator)}", outcome, extra=extra)
