"""Ordered window snapshots: each window's scores ascending, kept sorted between reads and patched with what
entered and left since (or sorted again), always the window's scores in order, as floats."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.score_summary import ascending_stats, score_stats
from monitor.metrics.windows import WindowStore
from tests.support.metrics_scrape import FakeClock

score = st.sampled_from([0.0, -0.0, 0.5, 1.0, 1, 0, True, None]) | st.floats(0, 1)
operation = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["a", "b"]), st.lists(score, min_size=1, max_size=30)),
    st.tuples(st.just("wait"), st.sampled_from([1.0, 30.0, 61.0])),
    st.tuples(st.just("read"), st.sampled_from(["a", "b"])),
)


def check(store: WindowStore, service: str) -> None:
    for seconds in (60.0, 3600.0):
        plain = store.snapshot("e", service, seconds)
        ordered = store.snapshot("e", service, seconds, ordered=True)
        assert list(ordered.scores) == sorted(plain.scores)
        assert all(type(s) is float for s in ordered.scores)
        assert (ordered.passed, ordered.verdicts) == (plain.passed, plain.verdicts)
        assert repr(ascending_stats(ordered.scores)) == repr(score_stats(plain.scores))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([5, 40, 200]), st.lists(operation, max_size=50))
def test_ordered_snapshots_are_the_scores_sorted(cap: int, operations: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    store = WindowStore([60.0, 3600.0], sample_cap=cap, clock=clock)
    for op in operations:
        if op[0] == "add":
            _, service, scores = op
            store.add_many((("e", service, ""), s, None if s is None else s >= 0.5) for s in scores)
        elif op[0] == "wait":
            clock.now += op[1]
        else:
            check(store, op[1])
    for service in ("a", "b"):
        check(store, service)


def test_small_changes_patch_the_sorted_scores_and_large_ones_sort_again() -> None:
    clock = FakeClock()
    store = WindowStore([3600.0], sample_cap=1000, clock=clock)
    key = ("e", "svc", "")
    store.add_many((key, (i * 7919 % 1000) / 1000, True) for i in range(1000))
    first = store.snapshot(*key[:2], 3600.0, ordered=True).scores
    assert store.snapshot(*key[:2], 3600.0, ordered=True).scores is first  # unchanged: the same sort
    store.add_many((key, s, True) for s in (0.0005, 0.9995, 0.5, math.inf))  # 4 in, the 4 oldest out
    patched = store.snapshot(*key[:2], 3600.0, ordered=True).scores
    assert list(patched) == sorted(store.snapshot(*key[:2], 3600.0).scores)
    store.add_many((key, 1.0 - i / 500, True) for i in range(500))  # half the window: past the patch limit
    again = store.snapshot(*key[:2], 3600.0, ordered=True).scores
    assert list(again) == sorted(store.snapshot(*key[:2], 3600.0).scores)


def test_rows_since_a_mark_tell_what_entered_and_left_while_the_popped_log_reaches_back() -> None:
    store = WindowStore([3600.0], sample_cap=80, clock=FakeClock())
    key = ("e", "svc", "")
    store.add_many((key, i / 100, True) for i in range(100))  # 20 popped by the cap
    [before] = store.rows([key], 3600.0) or []
    assert (before.appended, before.held, before.added) == (100, 80, None)  # no mark: no changes asked
    store.add_many((key, s, None) for s in (2.0, None, 3.0))
    [after] = store.rows([key], 3600.0, since=[before.mark]) or []
    assert after.since == before.mark and after.held == 80
    assert sorted(after.added or (), key=str) == sorted([2.0, math.nan, 3.0], key=str)
    assert sorted(after.dropped or ()) == [0.2, 0.21, 0.22]  # the oldest, in arrival order
    store.add_many((key, 0.5, True) for _ in range(80))  # every row replaced since `before`
    [late] = store.rows([key], 3600.0, since=[before.mark]) or []
    assert late.added is None and late.dropped is None and late.ordered == (0.5,) * 80


def test_the_popped_log_is_bounded_past_it_a_reader_sorts_again() -> None:
    store = WindowStore([3600.0], sample_cap=1000, clock=FakeClock())
    key = ("e", "svc", "")
    store.add_many((key, i / 1000, True) for i in range(1000))
    [mark] = [rows.mark for rows in store.rows([key], 3600.0) or []]
    store.add_many((key, 0.5, True) for _ in range(100))  # 100 popped: within the log (an eighth of the cap)
    [rows] = store.rows([key], 3600.0, since=[mark]) or []
    assert rows.dropped is not None and len(rows.dropped) == 100
    store.add_many((key, 0.5, True) for _ in range(100))  # 200 popped since the mark: no longer all kept
    [rows] = store.rows([key], 3600.0, since=[mark]) or []
    assert rows.dropped is None and rows.added is None
