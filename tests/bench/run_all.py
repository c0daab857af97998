"""`make bench`: run every benchmark script under tests/bench and print their figures.

Each runs as a module from the repository root (`python -m tests.bench.bench_x`), so `tests` imports without a
path of this machine and without installing the tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def bench_modules() -> list[str]:
    """The module names of the benchmarks, in file-name order."""
    return [f"tests.bench.{script.stem}" for script in sorted(HERE.glob("bench_*.py"))]


def main() -> int:
    failures = 0
    for module in bench_modules():
        print(f"== {module}", flush=True)
        result = subprocess.run([sys.executable, "-m", module], cwd=ROOT, check=False)
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
