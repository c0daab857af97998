"""The shape of `monitor/`: each stage imports only the stages after it, and no module imports itself back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "monitor"

# stage -> stages it must never import (at run time; `if TYPE_CHECKING:` imports are types only)
FORBIDDEN = {
    "receivers": {"engine", "store", "review", "daemon", "sources"},
    "sources": {"engine", "store", "review", "daemon", "receivers"},
    "engine": {"receivers", "sources", "web", "daemon", "commands"},
    "metrics": {"engine", "receivers", "sources", "web", "daemon", "store", "review"},
    "alerting": {"engine", "receivers", "sources", "web", "daemon", "store", "review"},
    "store": {"engine", "receivers", "sources", "web", "daemon", "metrics"},  # the result store: the write side
    "review": {"engine", "receivers", "sources", "web", "daemon", "metrics"},  # the review's read side
    "web": {"engine", "receivers", "sources", "daemon"},
    "config": {"engine", "receivers", "sources", "web", "daemon", "metrics", "store", "review"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path) -> set[str]:
    """Modules `path` imports outside `if TYPE_CHECKING:` blocks, as absolute names."""
    tree = ast.parse(path.read_text())
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    name = ".".join(base + ([child.module] if child.module else []))
                else:
                    name = child.module or ""
                found.add(name)
                found.update(f"{name}.{alias.name}" for alias in child.names)
            elif isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            visit(child)

    visit(tree)
    return {name for name in found if name == "monitor" or name.startswith("monitor.")}


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("module", sorted(MODULES))
def test_stage_imports_flow_one_way(module: str) -> None:
    banned = FORBIDDEN.get(_stage(module), set())
    wrong = sorted(name for name in _runtime_imports(MODULES[module]) if _stage(name) in banned)
    assert not wrong, f"{module} ({_stage(module)}) must not import {wrong}"


def test_no_import_cycles() -> None:
    graph = {m: {n for n in _runtime_imports(p) if n in MODULES and n != m} for m, p in MODULES.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)


def test_evaluators_sdk_never_imports_monitor() -> None:
    offenders = []
    for path in sorted((ROOT / "evaluators").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if any(n == "monitor" or n.startswith("monitor.") for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders
