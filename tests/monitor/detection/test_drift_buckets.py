"""The running totals of the drift job's buckets: sliding a window over buckets (the ones that left subtracted,
those that joined added, a bucket read again replaced) gives the totals a sum of its buckets afresh gives, and a
group whose count goes back to 0 leaves the total."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.detection.buckets import RunningTotal
from monitor.store.signal_rows import ToolAggregate, VariantCount, WindowAggregates


def _bucket(rng: random.Random) -> WindowAggregates:
    tools = [ToolAggregate("shop", agent, tool, rng.randint(1, 5)) for agent in ("a", "b") for tool in ("search", "x")
             if rng.random() < 0.6]  # fmt: skip
    variants = [VariantCount("shop", "a", v, rng.randint(1, 9)) for v in ("1.4", "1.5") if rng.random() < 0.5]
    return WindowAggregates([], tools, [], [], variants)


def _rows(total: WindowAggregates) -> list[list[tuple]]:
    return [sorted(tuple(row) for row in group) for group in total]


@settings(max_examples=40)
@given(st.integers(0, 10_000), st.integers(2, 6))
def test_a_sliding_total_equals_the_sum_afresh(seed: int, width: int) -> None:
    rng = random.Random(seed)
    buckets = {float(i): _bucket(rng) for i in range(30)}
    running = RunningTotal()
    for first in range(0, 30 - width):
        starts = [float(s) for s in range(first, first + width)]
        if rng.random() < 0.3:  # a bucket in the total read again (kept once old enough), a row more
            again = rng.choice(starts[:-1])
            old = buckets[again]
            buckets[again] = old._replace(variants=[*old.variants, VariantCount("shop", "b", "2.0", 1)])
        assert _rows(running.update(buckets, starts)) == _rows(RunningTotal().update(buckets, starts))


def test_a_group_that_left_every_bucket_leaves_the_total() -> None:
    only = WindowAggregates([], [ToolAggregate("shop", "a", "search", 3)], [], [], [])
    empty = WindowAggregates([], [], [], [], [])
    running = RunningTotal()
    buckets = {0.0: only, 1.0: empty, 2.0: empty, 3.0: empty}
    assert running.update(buckets, [0.0, 1.0, 2.0]).tools == [ToolAggregate("shop", "a", "search", 3)]
    assert running.update(buckets, [1.0, 2.0, 3.0]).tools == []
