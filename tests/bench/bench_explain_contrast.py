"""Bench: the contrast of a slice with its reference (monitor/explain/contrast.py, issue 42) at the scale an
explanation reads: BENCH_CONTRAST_ROWS (default 100,000) rows × 30 codes, failures planted in a pair of values.

1. 28 single-valued dimensions of 8 values and a multi-valued `tool` (2 of 10 per row): 240-odd distinct codes;
2. the same with one dimension of a value per row (`user`: a distinct code per row, the code table's fallback).

Printed: the best of REPEATS wall-clock runs (target: under 0.5 s on the 2-core host) and the factors found.
Figures, not targets: exits 0 unless a run broke.

    python -m tests.bench.bench_explain_contrast
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from monitor.explain.contrast import Contrast, contrast
from monitor.explain.rows import DimensionRows
from monitor.store.dimension_codes import PAIR, SEPARATOR, code_of

ROWS = int(os.environ.get("BENCH_CONTRAST_ROWS", "100000"))
REPEATS = 5
TARGET = 0.5


def dataset(n: int, per_row_value: bool) -> tuple[DimensionRows, np.ndarray]:
    """`n` rows and their failures (at 2 %, and at 60 % when `model=v0` and `tool=t0` both hold)."""
    rng = np.random.default_rng(42)
    names = ["model", *(f"dim{d:02}" for d in range(27))]
    picked = rng.integers(0, 8, (n, len(names)))
    tools = np.sort(np.stack([rng.integers(0, 5, n), rng.integers(5, 10, n)], axis=1), axis=1)
    table = np.array([[code_of(d, f"v{v}") for v in range(8)] for d in names], dtype=np.uint64)
    tool_codes = np.array([code_of("tool", f"t{t}") for t in range(10)], dtype=np.uint64)
    columns = [table[np.arange(len(names)), picked], tool_codes[tools]]
    pairs = [[*(f"{d}{PAIR}v{v}" for d, v in zip(names, row)), *(f"tool{PAIR}t{t}" for t in ts)]
             for row, ts in zip(picked.tolist(), tools.tolist())]  # fmt: skip
    if per_row_value:
        columns.append(np.array([[code_of("user", f"u{i}")] for i in range(n)], dtype=np.uint64))
        for i, row in enumerate(pairs):
            row.append(f"user{PAIR}u{i}")
    codes = np.concatenate(columns, axis=1)
    offsets = np.arange(n + 1, dtype=np.int64) * codes.shape[1]
    rows = DimensionRows(codes.reshape(-1), offsets, [SEPARATOR.join(p) for p in pairs])
    planted = (picked[:, 0] == 0) & (tools[:, 0] == 0)
    failed = rng.random(n) < np.where(planted, 0.6, 0.02)
    return rows, failed


def timed(rows: DimensionRows, failed: np.ndarray) -> tuple[float, float, Contrast]:
    contrast(rows, failed, ~failed)  # scipy's import, once
    wall, cpu = float("inf"), float("inf")
    for _ in range(REPEATS):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = contrast(rows, failed, ~failed)
        wall, cpu = min(wall, time.perf_counter() - started), min(cpu, time.process_time() - started_cpu)
    return wall, cpu, result


def main() -> int:
    for label, per_row_value in (("240 distinct codes", False), ("plus a distinct code per row", True)):
        rows, failed = dataset(ROWS, per_row_value)
        wall, cpu, result = timed(rows, failed)
        verdict = "OK" if wall < TARGET else "MISSED"
        print(f"{ROWS:,} rows × {len(rows.codes) / ROWS:.0f} codes, {label}: {wall * 1000:.0f} ms wall, "
              f"{cpu * 1000:.0f} ms CPU (target < {TARGET:g} s: {verdict}); {result.tested} tested, "
              f"{result.slice_traces} failures")  # fmt: skip
        for factor in result.factors[:3]:
            values = " AND ".join(f"{v.dimension}={v.value}" for v in factor.values)
            lift = "∞" if factor.lift is None else f"{factor.lift:.1f}×"
            print(
                f"   {values}: {factor.slice_share:.0%} of failures, {factor.reference_share:.1%} of the rest, {lift}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
