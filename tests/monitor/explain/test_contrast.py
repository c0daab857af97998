"""The contrast of a slice with its reference (monitor/explain/contrast.py): a planted value or pair is found
with its lift, random failures give nothing, and the counts are those a plain recount gives."""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence

import numpy as np
import pytest
from scipy.stats import fisher_exact

from monitor.explain.contrast import Contrast, ContrastSettings, contrast
from monitor.explain.model import Factor
from monitor.explain.rows import DimensionRows
from monitor.store.dimension_codes import Pair, code_of, packed
from tests.support.seeded_traces import seeded_traces


def rows_of(traces: Sequence[Sequence[Pair]]) -> DimensionRows:
    blobs, texts = zip(*(packed(pairs) for pairs in traces), strict=True) if traces else ((), ())
    return DimensionRows.of(blobs, texts)


def explained(traces: Sequence[tuple[list[Pair], bool]], settings: ContrastSettings | None = None) -> Contrast:
    failed = np.array([f for _, f in traces], dtype=bool)
    return contrast(rows_of([p for p, _ in traces]), failed, ~failed, settings)


def values(factor: Factor) -> set[Pair]:
    return {(v.dimension, v.value) for v in factor.values}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_value_failures_concentrate_in_ranks_first_with_its_true_lift(seed: int) -> None:
    seeded = seeded_traces(seed, 8000, "value")
    result = explained(seeded.traces)
    top = result.factors[0]
    assert values(top) == set(seeded.planted) == {("model", "m0")}
    assert seeded.true_lift is not None and top.lift is not None
    assert abs(top.lift / seeded.true_lift - 1) < 0.10, (top.lift, seeded.true_lift)
    assert top.q_value <= 0.01 and top.slice_share > top.reference_share
    failures = sum(f for _, f in seeded.traces)
    assert result.slice_traces == failures and result.reference_traces == 8000 - failures
    assert top.coverage == pytest.approx(top.slice_traces / failures)
    assert result.tested >= 20 * 3 + 4 + 5  # every value of every dimension is held by enough traces


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_pair_failures_need_both_values_of_ranks_first(seed: int) -> None:
    seeded = seeded_traces(seed, 8000, "pair")
    result = explained(seeded.traces)
    top = result.factors[0]
    assert len(top.values) == 2 and values(top) == set(seeded.planted)
    singles = {next(iter(values(f))): f for f in result.factors if len(f.values) == 1}
    assert set(seeded.planted) <= set(singles)  # both halves are significant too, and rank after the pair
    assert top.lift is not None and seeded.true_lift is not None
    assert all(top.lift > singles[v].lift for v in seeded.planted)  # type: ignore[operator]
    assert abs(top.lift / seeded.true_lift - 1) < 0.2  # ~80 reference traces hold the pair: a rougher figure
    assert top.slice_share == pytest.approx(1.0) and top.coverage == pytest.approx(1.0)


def test_failures_at_random_give_no_factor_in_95_of_100_seeds() -> None:
    started = time.perf_counter()
    false = [seed for seed in range(100) if explained(seeded_traces(1000 + seed, 2000, None).traces).factors]
    assert len(false) <= 5, false
    assert time.perf_counter() - started < 30


def test_the_p_value_is_fishers_exact_one_sided_test_of_the_presence_table() -> None:
    traces = [([("model", "x")], True)] * 12 + [([("model", "y")], True)] * 3
    traces += [([("model", "x")], False)] * 10 + [([("model", "y")], False)] * 40
    (factor,) = explained(traces).factors
    assert values(factor) == {("model", "x")}
    expected = fisher_exact([[12, 3], [10, 40]], alternative="greater").pvalue
    assert factor.p_value == pytest.approx(expected, rel=1e-9)
    assert (factor.slice_traces, factor.reference_traces) == (12, 10)
    assert factor.slice_share == pytest.approx(12 / 15) and factor.reference_share == pytest.approx(10 / 50)
    assert factor.lift == pytest.approx(4.0)


def test_counts_equal_a_plain_recount() -> None:
    """Random rows with a multi-valued dimension, rows without dimensions and a planted value: each factor's
    counts and shares as a loop over the rows finds them."""
    rng = np.random.default_rng(7)
    traces: list[tuple[list[Pair], bool]] = []
    for _ in range(3000):
        failed = bool(rng.random() < 0.2)
        pairs = [("tool", f"t{t}") for t in sorted(set(rng.integers(0, 6, rng.integers(0, 4)).tolist()))]
        if rng.random() < 0.9:
            pairs.append(("model", "hot" if failed and rng.random() < 0.5 else f"m{rng.integers(0, 3)}"))
        if failed and rng.random() < 0.6:
            pairs.append(("tool", "broken"))
        traces.append((pairs, failed))
    result = explained(traces)
    assert result.factors
    for factor in result.factors:
        wanted = values(factor)
        dimensions = {d for d, _ in wanted}
        for side, traces_of_side, share in (
            (True, factor.slice_traces, factor.slice_share),
            (False, factor.reference_traces, factor.reference_share),
        ):
            carriers = [set(p) for p, f in traces if f == side and dimensions <= {d for d, _ in p}]
            holders = sum(wanted <= pairs for pairs in carriers)
            assert traces_of_side == holders
            assert share == pytest.approx(holders / len(carriers))
    assert any(values(f) == {("tool", "broken")} for f in result.factors)
    assert any(values(f) == {("model", "hot")} for f in result.factors)


def test_an_empty_slice_or_reference_gives_no_factor() -> None:
    rows = rows_of([[("model", "x")]] * 10)
    nothing, everything = np.zeros(10, dtype=bool), np.ones(10, dtype=bool)
    assert contrast(rows, nothing, everything) == Contrast([], 0, 0, 10)
    assert contrast(rows, everything, nothing) == Contrast([], 0, 10, 0)
    assert contrast(rows, everything, everything) == Contrast([], 0, 10, 0)  # a row in both counts as slice
    assert contrast(rows_of([]), np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)) == Contrast([], 0, 0, 0)


def test_identical_rows_differ_in_nothing() -> None:
    pairs = [("model", "x"), ("tool", "a"), ("tool", "b")]
    result = explained([(pairs, i % 3 == 0) for i in range(300)])
    assert result.factors == [] and result.tested == 3
    assert (result.slice_traces, result.reference_traces) == (100, 200)


def test_a_value_only_in_the_slice_has_no_lift() -> None:
    traces = [([("model", "x"), ("env", "prod")], True)] * 20 + [([("model", "y"), ("env", "prod")], False)] * 200
    factors = explained(traces).factors
    assert [values(f) for f in factors] == [{("model", "x")}]
    assert factors[0].lift is None and factors[0].reference_share == 0.0 and factors[0].slice_share == 1.0


def test_rows_without_codes_count_in_the_slice_but_carry_no_dimension() -> None:
    traces = [([("model", "x")], True)] * 20 + [([], True)] * 10 + [([("model", "y")], False)] * 100
    traces += [([("model", "x")], False)] * 5 + [([], False)] * 50
    result = explained(traces)
    (factor,) = result.factors
    assert (result.slice_traces, result.reference_traces) == (30, 155)
    assert factor.slice_share == pytest.approx(20 / 20) and factor.reference_share == pytest.approx(5 / 105)
    assert factor.coverage == pytest.approx(20 / 30)


def test_a_multi_valued_dimension_counts_each_carrier_once() -> None:
    traces = [([("tool", "search"), ("tool", "book")], True)] * 30
    traces += [([("tool", "search")], False)] * 60 + [([("tool", "cancel")], False)] * 60
    by_value = {next(iter(values(f))): f for f in explained(traces).factors if len(f.values) == 1}
    assert set(by_value) == {("tool", "book"), ("tool", "search")}
    assert by_value["tool", "book"].slice_share == 1.0 and by_value["tool", "book"].lift is None
    search = by_value["tool", "search"]
    assert search.slice_share == 1.0 and search.reference_share == pytest.approx(0.5) and search.lift == 2.0


def test_a_row_in_both_masks_counts_as_slice() -> None:
    rows = rows_of([[("model", "x")]] * 10 + [[("model", "y")]] * 40)
    in_slice = np.r_[np.ones(10, dtype=bool), np.zeros(40, dtype=bool)]
    result = contrast(rows, in_slice, np.ones(50, dtype=bool))
    assert (result.slice_traces, result.reference_traces) == (10, 40)
    assert [(values(f), f.slice_traces, f.reference_traces) for f in result.factors] == [({("model", "x")}, 10, 0)]


def test_a_row_in_neither_mask_is_left_out() -> None:
    rows = rows_of([[("model", "x")]] * 10 + [[("model", "y")]] * 40 + [[("model", "x")]] * 100)
    in_slice, in_reference = np.zeros(150, dtype=bool), np.zeros(150, dtype=bool)
    in_slice[:10], in_reference[10:50] = True, True
    (factor,) = contrast(rows, in_slice, in_reference).factors
    assert (factor.slice_traces, factor.reference_traces, factor.lift) == (10, 0, None)


def test_a_code_repeated_within_a_row_counts_once() -> None:
    x, y = code_of("model", "x"), code_of("model", "y")
    blobs = [struct.pack("<3Q", x, x, x)] * 10 + [struct.pack("<2Q", y, y)] * 40 + [struct.pack("<Q", x)] * 5
    texts = ["model\x1ex"] * 10 + ["model\x1ey"] * 40 + ["model\x1ex"] * 5
    rows = DimensionRows.of(blobs, texts)
    in_slice = np.arange(55) < 10
    (factor,) = contrast(rows, in_slice, ~in_slice).factors
    assert (factor.slice_traces, factor.reference_traces, factor.slice_share) == (10, 5, 1.0)
    assert factor.reference_share == pytest.approx(5 / 45)


def test_a_code_no_text_names_is_left_out() -> None:
    traces = [([("model", "x")], True)] * 20 + [([("model", "y")], False)] * 100
    rows = rows_of([p for p, _ in traces])
    unnamed = DimensionRows(rows.codes, rows.offsets, [None] * rows.n)
    failed = np.array([f for _, f in traces])
    assert len(contrast(rows, failed, ~failed).factors) == 1
    result = contrast(unnamed, failed, ~failed)
    assert result.factors == [] and result.tested == 2


def test_a_value_held_by_fewer_than_min_traces_is_not_tested() -> None:
    traces = [([("model", "rare")], True)] * 4 + [([("model", "x")], True)] * 6 + [([("model", "y")], False)] * 90
    assert explained(traces).tested == 2
    result = explained(traces, ContrastSettings(min_traces=4))
    assert result.tested == 3 and {("model", "rare")} in [values(f) for f in result.factors]


def test_no_pair_is_kept_when_one_of_its_values_is_only_in_the_slice() -> None:
    """A pair with a value no reference trace holds is a subset of that value: its lift cannot beat it."""
    traces = [([("model", "x"), ("tool", "a")], True)] * 30 + [([("model", "y"), ("tool", "a")], False)] * 30
    traces += [([("model", "y"), ("tool", "b")], False)] * 100
    result = explained(traces)
    assert [values(f) for f in result.factors] == [{("model", "x")}, {("tool", "a")}]
    assert result.tested == 4 + 1  # the pair was tested, and dropped


def test_max_factors_keeps_the_largest_share_differences() -> None:
    traces = [([(f"d{i}", "hot") for i in range(6)], True)] * 40
    traces += [([(f"d{i}", "hot" if j < 5 * i else "cold") for i in range(6)], False) for j in range(100)]
    result = explained(traces, ContrastSettings(max_factors=3, pair_candidates=0))
    assert [values(f) for f in result.factors] == [{("d0", "hot")}, {("d1", "hot")}, {("d2", "hot")}]
    differences = [f.slice_share - f.reference_share for f in result.factors]
    assert differences == sorted(differences, reverse=True)


def test_masks_of_another_length_are_refused() -> None:
    rows = rows_of([[("model", "x")]] * 3)
    with pytest.raises(ValueError, match="3 rows"):
        contrast(rows, np.ones(2, dtype=bool), np.zeros(2, dtype=bool))


def test_factors_rank_by_share_difference_not_by_lift() -> None:
    def trace(a: bool, b: bool, failed: bool) -> tuple[list[Pair], bool]:
        return [("a", "on" if a else "off"), ("b", "on" if b else "off")], failed

    traces = [trace(i < 90, i < 20, True) for i in range(100)]
    traces += [trace(i < 300, 300 <= i < 310, False) for i in range(1000)]
    factors = explained(traces, ContrastSettings(pair_candidates=0)).factors
    assert [values(f) for f in factors] == [{("a", "on")}, {("b", "on")}]
    assert factors[0].lift == pytest.approx(3.0) and factors[1].lift == pytest.approx(20.0)


def test_a_value_more_present_but_a_smaller_share_of_its_carriers_is_no_factor() -> None:
    """The test counts presence over every row, the shares are over the carriers: a value the slice holds more
    often only because its dimension is carried more often there has a lift under 1, and is left out."""
    traces = [([("env", "x")], True)] * 20 + [([("env", "y")], True)] * 20
    traces += [([("env", "x")], False)] * 10 + [([], False)] * 190
    factors = explained(traces).factors
    assert [values(f) for f in factors] == [{("env", "y")}]


def test_at_equal_share_difference_a_value_the_reference_carries_too_ranks_before_a_dimension_it_never_has() -> None:
    """The failures all have tool.failed=search (a dimension no pass has: the failure itself) and model=bad (a
    model the passes never use): both 100 % against 0 %; the model, told apart from the passes' models, first."""
    failing = [([("model", "bad"), ("tool.failed", "search")], True) for _ in range(20)]
    passing = [([("model", f"ok{i % 2}")], False) for i in range(40)]
    found = explained(failing + passing)
    assert [values(f) for f in found.factors[:2]] == [{("model", "bad")}, {("tool.failed", "search")}]
    assert found.factors[0].slice_share - found.factors[0].reference_share == 1.0
