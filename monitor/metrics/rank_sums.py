"""A live comparison's Mann-Whitney rank terms, kept up to date as its windows change.

`rank_terms` of two sides' windows costs a sort of every score (20,000 for two full windows) at every scrape
with new results. `RankSums` keeps the last terms and the windows' rows they were computed from, and patches
them with the scores that entered and left since: the cost follows the changes, not the windows.

Both terms are exact integers, so a patch gives the very values `rank_terms` gives. With B and C the baseline's
and the candidate's scores, U_c counts the pairs (b, c) with c > b, ties one half, so it is bilinear in the
two multisets: with B1 = B0 + ΔB and C1 = C0 + ΔC (signed changes),
U(B1, C1) = U(B0, C0) + U(B0, ΔC) + U(ΔB, C1), where a candidate score y adds 2·#{b < y} + #{b = y} to 2·U
and a baseline score x adds 2·|C| - 2·#{c < x} - #{c = x}: binary searches in the ascending windows.
The tie term Σ(t³ - t) over the pooled values changes only at the changed values: Σ(t1³ - t0³) over them,
minus the change of N, with t1 counted in the new windows and t0 = t1 minus the value's net change.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from itertools import chain, compress, repeat
from operator import add, eq, mul, sub

from evaluators.sdk.significance import rank_terms
from monitor.metrics.windows import WindowRows

# Patch while the changed values are at most this share of the pooled scores: a patch costs a few binary
# searches per changed value, `rank_terms` a sort and a few passes over every score.
PATCH_LIMIT = 0.125

Runs = Sequence[tuple[float, ...]]
Changes = tuple[Sequence[float], Sequence[float]]  # one window's scores added and dropped


def _tally(runs: Runs, values: Sequence[float]) -> tuple[list[int], list[int]]:
    """For each of `values`: how many scores of the ascending `runs` are below it, and how many equal it. One
    binary search per value and run; a second only where the value is present (ties)."""
    below = [0] * len(values)
    equal = [0] * len(values)
    for run in runs:
        if not run:
            continue
        lows = list(map(bisect_left, repeat(run), values))
        below = list(map(add, below, lows))
        last = len(run) - 1
        present = list(map(eq, map(run.__getitem__, map(min, lows, repeat(last))), values))
        for i in compress(range(len(values)), present):
            equal[i] += bisect_right(run, values[i], lows[i]) - lows[i]
    return below, equal


def _changes(old: WindowRows, new: WindowRows) -> Changes | None:
    """(scores added, scores dropped) from `old` to `new` rows of one window, NaN included; None when the
    rows do not tell (every row replaced, or not the same window)."""
    added = new.appended - old.appended
    dropped = (new.appended - len(new.arrival)) - (old.appended - len(old.arrival))
    if added < 0 or dropped < 0 or added > len(new.arrival) or dropped > len(old.arrival):
        return None
    return new.arrival[len(new.arrival) - added :], old.arrival[:dropped]


def _side_changes(old: Sequence[WindowRows], new: Sequence[WindowRows]) -> list[Changes] | None:
    """`_changes` of each window of a side; None when one of them does not tell."""
    changes = []
    for before, now in zip(old, new, strict=True):
        change = _changes(before, now)
        if change is None:
            return None
        changes.append(change)
    return changes


def _net(pairs: Sequence[Changes]) -> dict[float, int]:
    """The net change of each value over windows' (added, dropped) scores, NaN and zero changes left out."""
    counts: Counter[float] = Counter(chain.from_iterable(added for added, _ in pairs))
    counts.subtract(chain.from_iterable(dropped for _, dropped in pairs))
    return {value: n for value, n in counts.items() if n and value == value}


class RankSums:
    """2·U_c and the tie term (`rank_terms`) of a comparison's baseline and candidate windows, patched from
    the previous call's when few scores changed. Not thread-safe: one caller at a time."""

    def __init__(self, patch_limit: float = PATCH_LIMIT) -> None:
        self.patch_limit = patch_limit
        self.patched = 0  # calls answered by a patch (the others computed the terms from every score)
        self._last: tuple[object, list[WindowRows], list[WindowRows], tuple[int, int]] | None = None

    def terms(self, source: object, base: Sequence[WindowRows], cand: Sequence[WindowRows]) -> tuple[int, int]:
        """`rank_terms` of the baseline's and the candidate's scores (each side's windows together); `source`
        names the windows (equal sources: the same windows, row for row, as at the last call)."""
        base, cand = list(base), list(cand)
        terms = self._patched(source, base, cand)
        if terms is None:
            terms = rank_terms(_pooled(base), _pooled(cand))
        else:
            self.patched += 1
        self._last = (source, base, cand, terms)
        return terms

    def _patched(self, source: object, base: list[WindowRows], cand: list[WindowRows]) -> tuple[int, int] | None:
        last = self._last
        if last is None or last[0] != source:
            return None
        _, base0, cand0, (twice_u, ties) = last
        base_changes, cand_changes = _side_changes(base0, base), _side_changes(cand0, cand)
        if base_changes is None or cand_changes is None:
            return None
        pooled = sum(len(rows.ordered) for rows in chain(base, cand))
        if sum(len(a) + len(d) for a, d in chain(base_changes, cand_changes)) > self.patch_limit * pooled:
            return None
        delta_b, delta_c = _net(base_changes), _net(cand_changes)
        runs_b0 = [rows.ordered for rows in base0]
        runs_b1 = [rows.ordered for rows in base]
        runs_c1 = [rows.ordered for rows in cand]
        n_c1 = sum(map(len, runs_c1))
        # U(B0, ΔC): each candidate value against the old baseline
        values_c, weights_c = list(delta_c), list(delta_c.values())
        below, equal_b0 = _tally(runs_b0, values_c)
        twice_u += sum(map(mul, weights_c, map(add, map(add, below, below), equal_b0)))
        # U(ΔB, C1): each baseline value against the new candidate
        values_b, weights_b = list(delta_b), list(delta_b.values())
        below, equal_c1 = _tally(runs_c1, values_b)
        twice_u += sum(map(mul, weights_b, map(sub, repeat(2 * n_c1), map(add, map(add, below, below), equal_c1))))
        # Pooled counts now (t1) of every changed value, and before (t0 = t1 - net change)
        _, own_b1 = _tally(runs_b1, values_b)
        t1 = dict(zip(values_b, map(add, own_b1, equal_c1), strict=True))
        fresh = [value for value in values_c if value not in t1]
        if fresh:
            _, own_c1 = _tally(runs_c1, fresh)
            b1 = [equal_b0[i] for i, value in enumerate(values_c) if value not in t1]  # ΔB is 0 at these
            t1.update(zip(fresh, map(add, b1, own_c1), strict=True))
        cubes = 0
        for value, now in t1.items():
            before = now - delta_b.get(value, 0) - delta_c.get(value, 0)
            cubes += now**3 - before**3
        n0 = sum(len(rows.ordered) for rows in chain(base0, cand0))
        return twice_u, ties + cubes - (pooled - n0)


def _pooled(rows: Sequence[WindowRows]) -> tuple[float, ...]:
    """A side's scores: its windows' ascending runs one after the other."""
    return rows[0].ordered if len(rows) == 1 else tuple(chain.from_iterable(r.ordered for r in rows))
