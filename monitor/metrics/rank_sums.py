"""A live comparison's Mann-Whitney rank terms, kept up to date as its windows change.

`rank_terms` of two sides' windows sorts every score (20,000 for two full windows) at every scrape with new
results. `RankSums` keeps the last terms, the windows' rows they were computed from and how many pooled scores
have each value, and patches them with the scores that entered and left since: the cost follows the changes,
not the windows.

Both terms are exact integers, so a patch gives the very values `rank_terms` gives. With B and C the baseline's
and the candidate's scores, U_c counts the pairs (b, c) with c > b, ties one half, so it is bilinear in the
two multisets: with B1 = B0 + ΔB and C1 = C0 + ΔC (signed changes),
U(B1, C1) = U(B0, C0) + U(B0, ΔC) + U(ΔB, C1), where a candidate score y adds 2·#{b < y} + #{b = y} to 2·U
and a baseline score x adds 2·|C| - 2·#{c < x} - #{c = x}: binary searches in the windows' ascending scores.
The tie term Σ(t³ - t) over the pooled values changes only at the changed values, by Σ(t1³ - t0³) over them
minus the change of N, with t0 and t1 their pooled counts before and after.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from itertools import chain, compress, repeat
from operator import eq, mul, sub

from evaluators.sdk.significance import rank_terms
from monitor.metrics.windows import Mark, WindowRows

# Patch while the changed scores are at most this share of the pooled ones: a patch costs a binary search and
# a set operation or two per changed score, `rank_terms` a sort and a few passes over every score.
PATCH_LIMIT = 0.125

_minus_one = (-1).__add__
Runs = Sequence[tuple[float, ...]]


def twice_below(runs: Runs, values: Sequence[float]) -> int:
    """Σ over `values` of 2·#{s < v} + #{s = v}, s the scores of the ascending `runs`: one binary search per
    distinct value and run, a second only where the value is present (ties); every step in C."""
    if not values:
        return 0
    counts = Counter(values)
    weights: list[int] | None = None
    if len(counts) < len(values):  # repeated values (scores of a few levels): each searched once
        values, weights = list(counts), list(counts.values())
    total = 0
    for run in runs:
        if not run:
            continue
        highs = list(map(bisect_right, repeat(run), values))  # #{s <= v}
        total += 2 * (sum(highs) if weights is None else sum(map(mul, highs, weights)))
        # present: the score just under the insertion point equals the value (at 0, run[-1] is above it)
        present = list(map(eq, map(run.__getitem__, map(_minus_one, highs)), values))
        if any(present):
            tops = list(compress(highs, present))
            lows = map(bisect_left, repeat(run), compress(values, present), repeat(0), tops)
            ties = map(sub, tops, lows)  # #{s = v}
            total -= sum(ties) if weights is None else sum(map(mul, ties, compress(weights, present)))
    return total


def _changes(old: Sequence[WindowRows], new: Sequence[WindowRows]) -> tuple[list[float], list[float]] | None:
    """The scores added to and dropped from a side's windows from `old` to `new` rows (read since `old`'s
    marks), NaN left out; None when the rows do not tell."""
    added: list[float] = []
    dropped: list[float] = []
    missing = False
    for before, now in zip(old, new, strict=True):
        if now.since != before.mark or now.added is None or now.dropped is None:
            return None
        added.extend(now.added)
        dropped.extend(now.dropped)
        missing = missing or before.missing > 0 or now.missing > 0
    if missing:  # a NaN has no rank
        added = list(compress(added, map(eq, added, added)))
        dropped = list(compress(dropped, map(eq, dropped, dropped)))
    return added, dropped


class PooledCounts:
    """How many pooled scores have each value: the distinct values in a set, and the counts above 1 in a dict.
    Scores that are all distinct (continuous scores) cost a set operation each, in C, as they enter and leave;
    repeated ones a Python step per distinct value."""

    def __init__(self, scores: Sequence[float]) -> None:
        self.present = set(scores)
        self.repeated: dict[float, int] = {}
        if len(self.present) < len(scores):
            counts = Counter(scores)
            self.repeated = dict(compress(counts.items(), map((1).__lt__, counts.values())))

    def count(self, value: float) -> int:
        return self.repeated.get(value) or (1 if value in self.present else 0)

    def remove(self, values: Sequence[float]) -> int:
        """Take `values` (all held) out; the change of Σ t³ over the values' counts t."""
        distinct = set(values)
        if len(distinct) == len(values) and (not self.repeated or self.repeated.keys().isdisjoint(distinct)):
            self.present.difference_update(distinct)  # each held once, now not at all
            return -len(values)
        return self._change(Counter(values), -1)

    def add(self, values: Sequence[float]) -> int:
        """Put `values` in; the change of Σ t³."""
        distinct = set(values)
        if len(distinct) == len(values) and self.present.isdisjoint(distinct):
            self.present.update(distinct)  # each held nowhere before, now once
            return len(values)
        return self._change(Counter(values), 1)

    def _change(self, changes: Counter[float], sign: int) -> int:
        cubes = 0
        for value, n in changes.items():
            before = self.count(value)
            after = before + sign * n
            cubes += after**3 - before**3
            if after > 1:
                self.repeated[value] = after
            else:
                self.repeated.pop(value, None)
            if after:
                self.present.add(value)
            else:
                self.present.discard(value)
        return cubes


class RankSums:
    """2·U_c and the tie term (`rank_terms`) of a comparison's baseline and candidate windows, patched from
    the previous call's when few scores changed. Not thread-safe: one caller at a time."""

    def __init__(self, patch_limit: float = PATCH_LIMIT) -> None:
        self.patch_limit = patch_limit
        self.patched = 0  # calls answered by a patch (the others computed the terms from every score)
        self._last: tuple[object, list[WindowRows], list[WindowRows], tuple[int, int]] | None = None
        self._counts: PooledCounts | None = None  # how many pooled scores have each value, as of `_last`

    def marks(self, source: object) -> list[Mark] | None:
        """Where the last call left the windows of `source` (for `WindowStore.rows(..., since=)`); None when
        the last call was not about them."""
        last = self._last
        if last is None or last[0] != source:
            return None
        return [rows.mark for rows in chain(last[1], last[2])]

    def terms(self, source: object, base: Sequence[WindowRows], cand: Sequence[WindowRows]) -> tuple[int, int]:
        """`rank_terms` of the baseline's and the candidate's scores (each side's windows together); `source`
        names the windows (equal sources: the same windows as at the last call); rows read since `marks(source)`
        are patched when few scores changed."""
        base, cand = list(base), list(cand)
        terms = self._patched(source, base, cand)
        if terms is None:
            terms = rank_terms(_pooled(base), _pooled(cand))
            self._counts = None  # counted when a patch needs them: windows that change much never do
        else:
            self.patched += 1
        self._last = (source, base, cand, terms)
        return terms

    def _patched(self, source: object, base: list[WindowRows], cand: list[WindowRows]) -> tuple[int, int] | None:
        last = self._last
        if last is None or last[0] != source:
            return None
        _, base0, cand0, (twice_u, ties) = last
        base_changes, cand_changes = _changes(base0, base), _changes(cand0, cand)
        if base_changes is None or cand_changes is None:
            return None
        (added_b, dropped_b), (added_c, dropped_c) = base_changes, cand_changes
        n0 = sum(len(rows.ordered) for rows in chain(base0, cand0))
        n1 = sum(len(rows.ordered) for rows in chain(base, cand))
        if len(added_b) + len(dropped_b) + len(added_c) + len(dropped_c) > self.patch_limit * max(n0, n1):
            return None
        # U(B0, ΔC): the candidate's changes against the old baseline
        runs_b0 = [rows.ordered for rows in base0]
        twice_u += twice_below(runs_b0, added_c) - twice_below(runs_b0, dropped_c)
        # U(ΔB, C1): the baseline's changes against the new candidate
        runs_c1 = [rows.ordered for rows in cand]
        n_c1 = sum(map(len, runs_c1))
        twice_u += 2 * n_c1 * (len(added_b) - len(dropped_b))
        twice_u -= twice_below(runs_c1, added_b) - twice_below(runs_c1, dropped_b)
        # Σ(t³ - t) = Σ t³ - N: the dropped scores taken out of the pooled counts, then the added put in
        counts = self._counts
        if counts is None:
            counts = self._counts = PooledCounts([*_pooled(base0), *_pooled(cand0)])
        cubes = counts.remove([*dropped_b, *dropped_c]) + counts.add([*added_b, *added_c])
        return twice_u, ties + cubes - (n1 - n0)


def _pooled(rows: Sequence[WindowRows]) -> tuple[float, ...]:
    """A side's scores: its windows' ascending runs one after the other."""
    return rows[0].ordered if len(rows) == 1 else tuple(chain.from_iterable(r.ordered for r in rows))
