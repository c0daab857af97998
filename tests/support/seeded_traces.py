"""Seeded traces with a known cause of failure, for the contrast's tests (and for sending the same datasets
through the daemon's receivers): `seeded_traces(seed, n, concentrate)`.

Every trace has 20 noise dimensions `noise00`…`noise19` (3–8 values each, `v0`…, drawn uniformly) and two more,
`model` (`m0`…`m3`) and `tool` (`t0`…`t4`), also uniform. Whether it failed depends on `concentrate`:

- "value": at rate HIGH when `model=m0`, BASE otherwise;
- "pair": at rate PAIR_RATE only when `model=m0` and `tool=t0` both hold, never otherwise;
- None: at rate BASE, whatever its dimensions.

`Seeded.true_lift` is the planted factor's lift from the generating probabilities, P(factor | failed) /
P(factor | passed), with P(failed | factor) = f and P(failed) = F: (f / (1 − f)) · ((1 − F) / F).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

BASE = 0.05
HIGH = 0.30
PAIR_RATE = 0.8
NOISE_DIMENSIONS = 20
MODELS = 4
TOOLS = 5

Pair = tuple[str, str]
Concentrate = Literal["value", "pair"] | None


class Seeded(NamedTuple):
    traces: list[tuple[list[Pair], bool]]  # per trace: its (dimension, value) pairs, and whether it failed
    planted: list[Pair]  # the factor failures concentrate in ([] for None)
    true_lift: float | None  # its lift from the generating probabilities (None for None)


def _lift(failing: float, overall: float) -> float:
    """P(factor | failed) / P(factor | passed) = (P(failed | factor) / P(failed)) / (P(passed | factor) / P(passed))."""
    return (failing / (1 - failing)) * ((1 - overall) / overall)


def seeded_traces(seed: int, n: int, concentrate: Concentrate = "value") -> Seeded:
    """`n` traces drawn with `seed` (the same seed, the same traces), failures planted as `concentrate` says."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, NOISE_DIMENSIONS)  # each noise dimension's number of values, 3–8
    noise = rng.integers(0, sizes, (n, NOISE_DIMENSIONS))
    model, tool = rng.integers(0, MODELS, n), rng.integers(0, TOOLS, n)
    if concentrate == "value":
        rate = np.where(model == 0, HIGH, BASE)
        share, failing = 1 / MODELS, HIGH
        planted, overall = [("model", "m0")], share * HIGH + (1 - share) * BASE
    elif concentrate == "pair":
        rate = np.where((model == 0) & (tool == 0), PAIR_RATE, 0.0)
        share, failing = 1 / (MODELS * TOOLS), PAIR_RATE
        planted, overall = [("model", "m0"), ("tool", "t0")], share * PAIR_RATE
    else:
        rate, planted = np.full(n, BASE), []
    failed = rng.random(n) < rate
    values = np.column_stack([noise, model, tool]).tolist()
    labels = [[(f"noise{d:02}", f"v{v}") for v in range(size)] for d, size in enumerate(sizes.tolist())]
    labels += [[("model", f"m{m}") for m in range(MODELS)], [("tool", f"t{t}") for t in range(TOOLS)]]
    traces = [([labels[d][v] for d, v in enumerate(row)], f) for row, f in zip(values, failed.tolist(), strict=True)]
    true_lift = _lift(failing, overall) if planted else None
    return Seeded(traces, planted, true_lift)


__all__ = ["Seeded", "seeded_traces"]
