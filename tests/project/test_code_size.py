"""Small modules with one job: no module over 400 lines, no class over 250, no function over 60 in `monitor/` and
`evaluators/` (issue 24's bar; split along a real seam when one grows past it)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 250
MAX_FUNCTION_LINES = 60


def _oversized(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    where = path.relative_to(ROOT)
    found = []
    if (lines := len(source.splitlines())) > MAX_MODULE_LINES:
        found.append(f"{where}: {lines} lines (module limit {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            length = node.end_lineno - node.lineno + 1
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if length > limit:
                found.append(f"{where}:{node.lineno} {node.name}: {length} lines (limit {limit})")
    return found


def test_no_module_class_or_function_is_over_its_size_limit() -> None:
    found = [problem for package in ("monitor", "evaluators") for p in sorted((ROOT / package).rglob("*.py"))
             for problem in _oversized(p)]  # fmt: skip
    assert not found, "\n".join(found)
