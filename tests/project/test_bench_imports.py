"""`make bench` runs each benchmark as a module from the repository root: every one imports that way (a
benchmark is never imported by pytest, so a broken import would show only in `make bench`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.bench.run_all import ROOT, bench_modules

pytestmark = pytest.mark.integration  # a fresh interpreter, as `make bench` starts


def test_every_benchmark_imports_as_make_bench_runs_it() -> None:
    modules = bench_modules()
    assert len(modules) > 10
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", code, *modules], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
