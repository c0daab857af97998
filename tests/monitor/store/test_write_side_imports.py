"""The result store's write side loads no builtin evaluator (its masking is the SDK's `evaluators.redaction`) and
not the review's read side (its stores reach that only in `reader()`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # each test starts a process or a server

WRITE_SIDE = (
    "monitor.store.from_config",
    "monitor.store.sqlite",
    "monitor.store.writer",
    "monitor.store.packing",
    "monitor.store.postgres.store",
)


def _loaded_after_import(prefixes: tuple[str, ...]) -> list[str]:
    """The modules under `prefixes` that a fresh interpreter holds after importing the write side."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {WRITE_SIDE!r}: importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_write_side_masks_without_loading_the_builtin_evaluators() -> None:
    assert _loaded_after_import(("evaluators.builtins",)) == []


def test_write_side_loads_no_read_side_module() -> None:
    assert _loaded_after_import(("monitor.review",)) == []
