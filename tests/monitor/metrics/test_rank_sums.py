"""`RankSums` patches a comparison's Mann-Whitney rank terms with the scores that entered and left its windows:
always the very terms `rank_terms` (the pooled sort, kept as the oracle) gives over the windows' scores, on
real `WindowStore` windows with ties, missing scores, several services per side, results leaving by time and
by the sample cap, and windows that change a little or completely between reads."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.sdk.significance import mann_whitney_floats, rank_terms, rank_test
from monitor.metrics.rank_sums import PooledCounts, RankSums, twice_below
from monitor.metrics.windows import Key, WindowRows, WindowStore
from tests.evaluators.sdk.test_significance_oracle import oracle_mann_whitney
from tests.support.metrics_scrape import FakeClock

WINDOW = 100.0
BASE: list[Key] = [("e", "a", "1.4"), ("e", "b", "1.4")]
CAND: list[Key] = [("e", "a", "1.5")]
SCORES = st.sampled_from([0.0, 0.5, 1.0, -0.0, 0.25]) | st.floats(-1e6, 1e6) | st.none()


def read(
    store: WindowStore, ranks: RankSums, source: str = "pair", seconds: float = WINDOW
) -> tuple[list[WindowRows], list[WindowRows]]:
    """Both sides' rows, with what changed since `ranks` last read them for `source`."""
    rows = store.rows([*BASE, *CAND], seconds, since=ranks.marks(source))
    assert rows is not None
    return rows[: len(BASE)], rows[len(BASE) :]


def scores(store: WindowStore, keys: list[Key], seconds: float = WINDOW) -> list[float]:
    """The oracle's input: a side's scores in arrival order (not the windows' ascending ones)."""
    return list(store.merged(keys, seconds).scores)


operation = st.one_of(
    st.tuples(st.just("add"), st.sampled_from([*BASE, *CAND]), st.lists(SCORES, min_size=1, max_size=6)),
    st.tuples(st.just("wait"), st.sampled_from([1.0, 10.0, 60.0, 101.0])),
    st.tuples(st.just("read")),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=60), st.sampled_from([1.0, 0.125]))
def test_patched_terms_are_the_pooled_sorts(operations: list[tuple[object, ...]], limit: float) -> None:
    clock = FakeClock()
    store = WindowStore([WINDOW], sample_cap=12, clock=clock)
    ranks = RankSums(patch_limit=limit)
    for op in [*operations, ("read",)]:
        if op[0] == "add":
            key, values = op[1], op[2]
            store.add_many((key, score, None) for score in values)  # type: ignore[union-attr, misc]
        elif op[0] == "wait":
            clock.now += op[1]  # type: ignore[operator]
        else:
            base, cand = read(store, ranks)
            terms = ranks.terms("pair", base, cand)
            b, c = scores(store, BASE), scores(store, CAND)
            assert terms == rank_terms(b, c)
            if b and c:  # the test from patched terms: the one the pooled sort and the old oracle give
                assert rank_test(len(b), len(c), *terms) == mann_whitney_floats(b, c) == oracle_mann_whitney(b, c)


def test_few_changes_are_patched_and_many_computed_again() -> None:
    clock = FakeClock()
    store = WindowStore([3600.0], sample_cap=2000, clock=clock)
    rng = random.Random(3)

    def add(n: int) -> None:
        for key in (*BASE, *CAND):
            store.add_many((key, rng.choice([rng.random(), 0.5, 1.0]), True) for _ in range(n))

    def terms() -> tuple[tuple[int, int], tuple[int, int]]:
        base, cand = read(store, ranks, seconds=3600.0)
        oracle = rank_terms(scores(store, BASE, 3600.0), scores(store, CAND, 3600.0))
        return ranks.terms("pair", base, cand), oracle

    ranks = RankSums()
    add(2000)  # full windows: from now on each new result pushes the oldest out
    got, oracle = terms()
    assert got == oracle and ranks.patched == 0
    for _ in range(5):
        add(20)
        got, oracle = terms()
        assert got == oracle
    assert ranks.patched == 5
    add(1000)  # half of every window replaced: sorting again costs less than patching
    got, oracle = terms()
    assert got == oracle and ranks.patched == 5
    clock.now += 3601  # every result left the windows by time
    got, oracle = terms()
    assert got == oracle == (0, 0)


def test_other_windows_are_computed_afresh() -> None:
    store = WindowStore([WINDOW], sample_cap=50, clock=FakeClock())
    for key in (*BASE, *CAND):
        store.add_many((key, float(i % 7), None) for i in range(30))
    ranks = RankSums(patch_limit=1.0)
    base, cand = read(store, ranks)
    ranks.terms("pair", base, cand)
    store.add_many((key, 3.0, None) for key in CAND)
    base, cand = read(store, ranks, "swapped")  # not what the last call was about: nothing to patch from
    swapped = ranks.terms("swapped", cand, base)
    assert swapped == rank_terms(scores(store, CAND), scores(store, BASE)) and ranks.patched == 0
    base, cand = read(store, RankSums())  # rows read without a mark: nothing to patch with
    assert ranks.terms("swapped", cand, base) == swapped and ranks.patched == 0


@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.5]) | st.floats(-5, 5), max_size=8), max_size=3),
       st.lists(st.sampled_from([0.0, 1.0, 2.5, -1.0, 9.0]) | st.floats(-5, 5), max_size=8))  # fmt: skip
def test_twice_below_counts_lower_scores_twice_and_equal_ones_once(
    runs: list[list[float]], values: list[float]
) -> None:
    ordered = [tuple(sorted(run)) for run in runs]
    assert twice_below(ordered, values) == sum(2 * (s < v) + (s == v) for run in runs for s in run for v in values)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0]) | st.floats(0, 1), max_size=12),
    st.lists(
        st.tuples(st.booleans(), st.lists(st.sampled_from([0.0, 0.5, 1.0, 0.25]) | st.floats(0, 1), max_size=8)),
        max_size=8,
    ),
)
def test_pooled_counts_follow_every_value_and_the_sum_of_cubes(
    start: list[float], batches: list[tuple[bool, list[float]]]
) -> None:
    oracle = Counter(start)
    counts = PooledCounts(start)
    for add, values in batches:
        if not add:  # take out only what is held (as windows drop only what they held): its first len(values)
            values = sorted(oracle.elements())[: len(values)]
        cubes_before = sum(n**3 for n in oracle.values())
        change = counts.add(values) if add else counts.remove(values)
        if add:
            oracle.update(values)
        else:
            oracle.subtract(values)
        assert change == sum(n**3 for n in oracle.values()) - cubes_before
        for value in {*oracle, *values}:
            assert counts.count(value) == oracle[value]
        assert counts.present == {v for v, n in oracle.items() if n} and len(counts.repeated) <= len(counts.present)


def test_pooled_counts_take_a_repeated_value_out_by_its_count() -> None:
    counts = PooledCounts([0.5, 0.5, 0.5, 0.1, 0.2, 0.3])
    assert counts.remove([0.5, 0.1, 0.2, 0.3]) == (8 - 27) - 3  # distinct scores, but 0.5 held three times
    assert counts.count(0.5) == 2 and counts.present == {0.5}
