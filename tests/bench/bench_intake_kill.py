"""Bench (issue 39's Done-when): under sustained load from the real OTel SDK exporter, the daemon and its worker
processes are SIGKILLed 20 times at random moments and restarted on the same data directory; every acknowledged
trace must be evaluated and stored exactly once (its failing result row counted by trace id), none twice.
BENCH_KILLS (default 20), BENCH_KILL_SEED (default 39)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.integration.kill_loop import run_kill_loop

KILLS = int(os.environ.get("BENCH_KILLS", "20"))
SEED = int(os.environ.get("BENCH_KILL_SEED", "39"))


def main() -> int:
    print(f"  running: {KILLS} SIGKILLs under load (seed {SEED})", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-intake-kill-") as tmp:
        result = run_kill_loop(Path(tmp), traces=10_000_000, kills=KILLS, seed=SEED)
    acked = set(result.acked)
    ok = not result.lost and not result.doubled and result.kills == KILLS
    print(f"  {result.kills} kills in {result.seconds:.0f} s: {len(acked):,} traces acknowledged, "
          f"{len(result.lost):,} lost, {len(result.doubled):,} stored twice, "
          f"{len(set(result.rows) - acked):,} stored but never acknowledged (retried exports): "
          f"{'OK' if ok else 'FAILED'}", flush=True)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
