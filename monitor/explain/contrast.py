"""What sets a slice of traces apart from its reference (issue 42, BubbleUp for agent quality): every dimension
value kept per trace, and the best pairs of them, ranked by how much more of the slice than of the reference
holds them.

Per distinct code of the rows read: `a` slice rows and `b` reference rows hold it (a row counts once per code),
and its dimension's carriers (rows holding any value of it) in each. The shares are over the carriers, the test
over every row: the one-sided hypergeometric tail (Fisher's exact test of the 2×2 presence table) that the slice
holds the value more often than chance, Benjamini–Hochberg over every value tested; a value is tested once
`min_traces` rows of slice and reference hold it, whatever their outcome.

Pairs: every two of the `pair_candidates` significant values with the largest share difference, counted with a
rows × candidates matrix product. Their shares are over the rows that carry both dimensions (as a single's are
over its dimension's carriers, so that singles and pairs rank on one scale); they are tested as their own family,
and a pair is kept only when its lift beats both of its values' (None: infinite), else it is a subset of its
better half. Singles and kept pairs rank together by share difference, then those whose dimensions the
reference carries too, then q-value, then lift.

Counting is sort-based: the distinct codes (`np.unique`), each code's index through a multiplicative-hash table
(a binary search when the codes do not fit one), and a stable sort of `row × distinct + index`, which the rows'
order leaves nearly sorted. Measured on this 2-core host (tests/bench/bench_explain_contrast.py, best of 5, CPU
time; the host was shared): 100,000 rows × 30 codes (3M codes, 240 distinct, one multi-valued dimension, a planted
pair) in 0.21 s, about half of it the distinct codes and the sort; with a dimension of a distinct value per row
(3.1M codes, 100,000 distinct) 0.30 s. Memory: a few int64 copies of the codes (24 MB each at 3M).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from monitor.detection.statistics import adjusted
from monitor.store.dimension_codes import VALUE_BITS, Pair, named

from .model import DimensionValue, Factor
from .rows import DimensionRows

_MIXER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of code × 2**64 / φ
_MAX_TABLE_BITS = 22  # a table of 4M int32 slots (16 MiB) at most


@dataclass(frozen=True, slots=True)
class ContrastSettings:
    """`fdr`: the Benjamini–Hochberg rate factors are kept at; `min_traces`: the rows of slice and reference that
    must hold a value (or pair) for it to be tested; `max_factors`: how many are returned; `pair_candidates`: the
    significant values whose pairs are tested."""

    fdr: float = 0.01
    min_traces: int = 5
    max_factors: int = 10
    pair_candidates: int = 12


class Contrast(NamedTuple):
    factors: list[Factor]  # significant, largest share difference first
    tested: int  # values and pairs tested
    slice_traces: int
    reference_traces: int


class _Entries(NamedTuple):
    """The distinct (row, code) of the rows read, ordered by row, then code."""

    rows: np.ndarray  # int64
    codes: np.ndarray  # int64: the index into `distinct`
    dimensions: np.ndarray  # int64: the index of the entry's dimension
    distinct: np.ndarray  # uint64, ascending
    code_dimensions: np.ndarray  # int64 per distinct code: the index of its dimension
    first_row: np.ndarray  # int64 per distinct code: the first row holding it


class _Tested(NamedTuple):
    """The values (members: one column) or pairs (two) tested, with their counts and statistics."""

    members: np.ndarray  # int64 (m, 1 or 2): indices into `_Entries.distinct`
    a: np.ndarray  # slice rows holding them
    b: np.ndarray  # reference rows holding them
    slice_share: np.ndarray
    reference_share: np.ndarray
    lift: np.ndarray  # inf: no reference row holds them
    p: np.ndarray
    q: np.ndarray
    significant: np.ndarray  # bool
    compared: np.ndarray  # bool: some reference row carries their dimension(s)

    @property
    def difference(self) -> np.ndarray:
        return self.slice_share - self.reference_share

    def where(self, keep: np.ndarray) -> _Tested:
        return _Tested(*(column[keep] for column in self))


def _index(codes: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """Each of `codes`' index in `distinct` (ascending, holding every one of them): a multiplicative hash into a
    table of 64 slots a code or more, and a binary search for the codes that share their slot with another."""
    bits = min(_MAX_TABLE_BITS, max(10, len(distinct).bit_length() + 6))
    shift = np.uint64(64 - bits)
    slots = (distinct * _MIXER) >> shift  # uint64 arrays wrap around: the hash
    ordered = np.sort(slots)
    table = np.zeros(1 << bits, dtype=np.int32)
    table[slots] = np.arange(len(distinct), dtype=np.int32)
    table[ordered[1:][ordered[1:] == ordered[:-1]]] = -1
    index = table[(codes * _MIXER) >> shift].astype(np.int64)
    shared = np.flatnonzero(index < 0)
    index[shared] = np.searchsorted(distinct, codes[shared])
    return index


def _entries(rows: DimensionRows, kept: np.ndarray) -> _Entries:
    """The distinct (row, code) of the `kept` rows, with each code's dimension."""
    row_of, codes = rows.row_of_codes(), np.asarray(rows.codes[: rows.offsets[-1]], dtype=np.uint64)
    if not kept.all():
        keep = kept[row_of]
        row_of, codes = row_of[keep], codes[keep]
    distinct = np.unique(codes)
    width = max(len(distinct), 1)
    key = row_of * width + _index(codes, distinct)
    key.sort(kind="stable")  # the rows come in order: timsort finds the runs already sorted
    key = key[np.r_[True, key[1:] != key[:-1]]]  # a code repeated within a row counts once
    entry_rows, entry_codes = np.divmod(key, width)
    dimension_code = distinct >> np.uint64(VALUE_BITS)  # ascending, as the codes are
    code_dimension = np.r_[0, np.cumsum(dimension_code[1:] != dimension_code[:-1])].astype(np.int64)
    first_row = np.full(len(distinct), rows.n, dtype=np.int64)
    np.minimum.at(first_row, entry_codes, entry_rows)
    return _Entries(entry_rows, entry_codes, code_dimension[entry_codes], distinct, code_dimension, first_row)


def _shares(
    a: np.ndarray, b: np.ndarray, slice_carriers: np.ndarray, reference_carriers: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(slice share, reference share, lift) over the carriers; a share of no carrier is 0, a lift over 0 inf."""
    slice_share = np.divide(a, slice_carriers, out=np.zeros(len(a)), where=slice_carriers > 0)
    reference_share = np.divide(b, reference_carriers, out=np.zeros(len(b)), where=reference_carriers > 0)
    lift = np.divide(slice_share, reference_share, out=np.full(len(a), np.inf), where=reference_share > 0)
    return slice_share, reference_share, lift


def _tested(
    members: np.ndarray,
    counts: tuple[np.ndarray, np.ndarray],
    carriers: tuple[np.ndarray, np.ndarray],
    sizes: tuple[int, int],
    settings: ContrastSettings,
) -> _Tested:
    """The members that `min_traces` rows hold, tested: over-representation in the slice (`sizes`: the slice's
    rows and the reference's), Benjamini–Hochberg over them as one family."""
    from scipy.stats import hypergeom

    a, b = counts
    keep = a + b >= settings.min_traces
    a, b, members = a[keep], b[keep], members[keep]
    slice_share, reference_share, lift = _shares(a, b, carriers[0][keep], carriers[1][keep])
    n_slice, n_reference = sizes
    p = np.clip(hypergeom.sf(a - 1, n_slice + n_reference, a + b, n_slice), 0.0, 1.0)
    q = np.asarray(adjusted(p.tolist()), dtype=float)
    significant = (q <= settings.fdr) & (lift > 1)
    compared = carriers[1][keep] > 0
    return _Tested(members, a, b, slice_share, reference_share, lift, p, q, significant, compared)


def _singles(entries: _Entries, in_slice: np.ndarray, sizes: tuple[int, int], settings: ContrastSettings) -> _Tested:
    """Every distinct code tested alone."""
    in_reference = (~in_slice[entries.rows]).view(np.uint8)  # column 0: the slice's count, 1: the reference's
    k, d = len(entries.distinct), int(entries.code_dimensions[-1]) + 1
    a, b = np.bincount(entries.codes * 2 + in_reference, minlength=2 * k).reshape(k, 2).T
    # a dimension's carriers: the first entry of each (row, dimension), the codes of a row being in dimension order
    first = np.r_[True, (entries.rows[1:] != entries.rows[:-1]) | (entries.dimensions[1:] != entries.dimensions[:-1])]
    carriers = np.bincount((entries.dimensions * 2 + in_reference)[first], minlength=2 * d).reshape(d, 2).T
    return _tested(
        np.arange(k, dtype=np.int64)[:, None], (a, b), tuple(carriers[:, entries.code_dimensions]), sizes, settings
    )


def _together(
    rows: np.ndarray, columns: np.ndarray, n: int, k: int, in_slice: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(in the slice, in the reference): k × k counts of the rows holding both columns, from (row, column)
    entries (column −1: none) through a rows × k matrix product."""
    hit = columns >= 0
    holds = np.zeros((n, k), dtype=np.float32)  # counts up to 2**24 exact
    holds[rows[hit], columns[hit]] = 1.0
    both = holds.T @ holds
    in_slice_both = holds.T @ (holds * in_slice[:, None])
    return np.rint(in_slice_both).astype(np.int64), np.rint(both - in_slice_both).astype(np.int64)


def _pairs(
    entries: _Entries, singles: _Tested, in_slice: np.ndarray, sizes: tuple[int, int], settings: ContrastSettings
) -> _Tested:
    """The pairs of the significant values with the largest share difference, tested as their own family; kept
    only when significant and their lift beats both of their values'."""
    chosen = np.flatnonzero(singles.significant)
    chosen = chosen[np.argsort(-singles.difference[chosen], kind="stable")][: settings.pair_candidates]
    if len(chosen) < 2:
        return _tested(np.zeros((0, 2), dtype=np.int64), (np.zeros(0),) * 2, (np.zeros(0),) * 2, sizes, settings)
    codes = singles.members[chosen, 0]
    k, n = len(codes), len(in_slice)
    column = np.full(len(entries.distinct), -1, dtype=np.int64)
    column[codes] = np.arange(k)
    a_all, b_all = _together(entries.rows, column[entries.codes], n, k, in_slice)
    dimensions, dimension_column = np.unique(entries.code_dimensions[codes], return_inverse=True)
    dimension_of = np.full(int(entries.code_dimensions[-1]) + 1, -1, dtype=np.int64)
    dimension_of[dimensions] = np.arange(len(dimensions))
    carry_slice, carry_reference = _together(
        entries.rows, dimension_of[entries.dimensions], n, len(dimensions), in_slice
    )
    i, j = np.triu_indices(k, 1)
    di, dj = dimension_column[i], dimension_column[j]
    pairs = _tested(
        np.stack([codes[i], codes[j]], axis=1),
        (a_all[i, j], b_all[i, j]),
        (carry_slice[di, dj], carry_reference[di, dj]),
        sizes,
        settings,
    )
    single_lift = np.zeros(len(entries.distinct))
    single_lift[codes] = singles.lift[chosen]
    beats = pairs.lift > np.maximum(single_lift[pairs.members[:, 0]], single_lift[pairs.members[:, 1]])
    return pairs._replace(significant=pairs.significant & beats)  # inf beats no inf


def _factor(
    names: list[Pair], a: int, b: int, shares: tuple[float, float], lift: float, p_q: tuple[float, float], n_slice: int
) -> Factor:
    return Factor(
        values=[DimensionValue(dimension=d, value=v) for d, v in sorted(names)],  # a pair by dimension name
        slice_traces=a,
        slice_share=shares[0],
        reference_traces=b,
        reference_share=shares[1],
        lift=None if lift == np.inf else lift,
        p_value=p_q[0],
        q_value=p_q[1],
        coverage=a / n_slice,
    )


def _ranked(
    rows: DimensionRows, entries: _Entries, found: list[_Tested], n_slice: int, settings: ContrastSettings
) -> list[Factor]:
    """The significant values and pairs of `found`, largest share difference first, then those whose dimensions
    the reference carries too (a value told apart from its dimension's other values, before a dimension the
    reference never has, such as `tool.failed` among an error evaluator's failures: the failure itself), then q,
    then lift; named, a code no row's text names left out."""
    kept = [t.where(t.significant) for t in found]
    fields = ("difference", "compared", "q", "lift")
    difference, compared, q, lift = (np.concatenate([getattr(t, f) for t in kept]) for f in fields)
    places = [(t, i) for t in kept for i in range(len(t.a))]
    names: dict[int, Pair | None] = {}

    def name(index: int) -> Pair | None:
        if index not in names:
            row = int(entries.first_row[index])
            names[index] = named(int(entries.distinct[index]), rows.texts[row]) if row < rows.n else None
        return names[index]

    factors: list[Factor] = []
    for place in np.lexsort((-lift, q, ~compared, -difference)).tolist():
        if len(factors) >= settings.max_factors:
            break
        t, i = places[place]
        values = [v for m in t.members[i] if (v := name(int(m))) is not None]
        if len(values) == t.members.shape[1]:
            shares = (float(t.slice_share[i]), float(t.reference_share[i]))
            p_q = (float(t.p[i]), float(t.q[i]))
            factors.append(_factor(values, int(t.a[i]), int(t.b[i]), shares, float(t.lift[i]), p_q, n_slice))
    return factors


def contrast(
    rows: DimensionRows,
    in_slice: np.ndarray,
    in_reference: np.ndarray,
    settings: ContrastSettings | None = None,
) -> Contrast:
    """The values and pairs that set the rows `in_slice` apart from those `in_reference` (boolean masks over the
    rows; a row in both counts as slice, one in neither is left out). No factor when either side is empty."""
    settings = settings or ContrastSettings()
    in_slice = np.asarray(in_slice, dtype=bool)
    in_reference = np.asarray(in_reference, dtype=bool) & ~in_slice
    if len(in_slice) != rows.n or len(in_reference) != rows.n:
        raise ValueError(f"masks of {len(in_slice)} and {len(in_reference)} rows for {rows.n} rows")
    sizes = (int(in_slice.sum()), int(in_reference.sum()))
    if not all(sizes):
        return Contrast([], 0, *sizes)
    entries = _entries(rows, in_slice | in_reference)
    if not len(entries.distinct):
        return Contrast([], 0, *sizes)
    singles = _singles(entries, in_slice, sizes, settings)
    pairs = _pairs(entries, singles, in_slice, sizes, settings)
    factors = _ranked(rows, entries, [singles, pairs], sizes[0], settings)
    return Contrast(factors, len(singles.a) + len(pairs.a), *sizes)


__all__ = ["Contrast", "ContrastSettings", "contrast"]
