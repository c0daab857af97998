"""The shape of `monitor/` and `evaluators/`: each stage imports only the stages after it, no module or package
imports itself back (directly or round a cycle), and the SDK never imports the daemon."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("evaluators", "monitor")

# stage -> stages it must never import (at run time; `if TYPE_CHECKING:` imports are types only)
FORBIDDEN = {
    "receivers": {"engine", "store", "review", "daemon", "sources"},
    "sources": {"engine", "store", "review", "daemon", "receivers"},
    "engine": {"receivers", "sources", "web", "daemon", "commands"},
    "offline": {"receivers", "sources", "web", "daemon", "commands", "store", "review"},  # the commands' engine
    # monitor/sessions (conversations, fed by the engine's results; the SDK's evaluators/sessions shares the name)
    "sessions": {"receivers", "sources", "web", "daemon", "commands", "review"},
    "metrics": {"engine", "receivers", "sources", "web", "daemon", "store", "review"},
    "alerting": {"engine", "receivers", "sources", "web", "daemon", "store", "review", "metrics"},
    "store": {"engine", "receivers", "sources", "web", "daemon", "metrics"},  # the result store: the write side
    "review": {"engine", "receivers", "sources", "web", "daemon", "metrics"},  # the review's read side
    "web": {"engine", "receivers", "sources", "daemon"},
    # explanations (monitor/explain): read the store through the review's reads, run beside the daemon
    "explain": {"engine", "receivers", "sources", "web", "daemon", "commands", "metrics"},
    "config": {"engine", "receivers", "sources", "web", "daemon", "metrics", "store", "review"},
    # the intake's contract and the receivers' authentication: below every stage that uses them
    "consumer": {"engine", "receivers", "sources", "web", "daemon", "metrics", "store", "review", "config"},
    # what an evaluation produces: read by the engine, the store, the sessions and the review alike
    "outcomes": {"engine", "receivers", "sources", "web", "daemon", "metrics", "store", "review", "config", "sessions"},
    # evaluation results out as OTLP log records (monitor/export): beside the store writes, below the engine
    "export": {"receivers", "sources", "web", "daemon", "commands", "store", "review", "metrics", "engine"},
    "auth": {"engine", "receivers", "sources", "web", "daemon", "metrics", "store", "review", "config"},
}
# Receiver tests run against tests/support/sink.py: they must not need the engine (not even indirectly).
RECEIVER_TESTS = (
    "tests.monitor.receivers.test_consumer_answers",
    "tests.monitor.receivers.test_grpc_inflight",
    "tests.monitor.receivers.test_otlp_http",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imports(path: Path, *, type_checking: bool) -> set[str]:
    return _imports_of(path.read_text(), _module_name(path), path.name == "__init__.py", type_checking=type_checking)


def _imports_of(source: str, me: str, is_package: bool, *, type_checking: bool) -> set[str]:
    """The modules of both packages that module `me` (of text `source`) imports, as absolute names.

    Imports inside functions count (they run, only later). `if TYPE_CHECKING:` imports count when
    `type_checking` is set. `from pkg import name` imports `pkg.name` when that is a module, else `pkg`; importing
    a module also runs its packages' `__init__`, except the packages the importer is itself inside (those are
    already being imported when it runs).
    """
    package = me if is_package else me.rsplit(".", 1)[0]
    targets: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and not type_checking:
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]))
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    name = ".".join(base + ([child.module] if child.module else []))
                else:
                    name = child.module or ""
                subs = {f"{name}.{alias.name}" for alias in child.names} & MODULES.keys()
                targets.update(subs)
                if len(subs) < len(child.names):
                    targets.add(name)
            elif isinstance(child, ast.Import):
                targets.update(alias.name for alias in child.names)
            visit(child)

    visit(ast.parse(source))
    mine = {me, *_ancestors(me)}
    found = {t for t in targets if t in MODULES}
    found |= {a for t in found for a in _ancestors(t) if a in MODULES}
    return found - mine


def _runtime_imports(path: Path) -> set[str]:
    return _imports(path, type_checking=False)


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` (a path that ends where it starts), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


# every import, `if TYPE_CHECKING:` ones too: a cycle of types is still two modules that know each other
GRAPH = {m: _imports(p, type_checking=True) for m, p in MODULES.items()}


def _child(package: str, module: str) -> str | None:
    """The direct child of `package` (a module or subpackage) that holds `module`, or None if none does."""
    if not module.startswith(package + "."):
        return None
    return package + "." + module[len(package) + 1 :].split(".", 1)[0]


def _package_graph(package: str) -> dict[str, set[str]]:
    """The imports between the direct children of `package`, each child standing for everything inside it."""
    graph: dict[str, set[str]] = {}
    for source, targets in GRAPH.items():
        here = _child(package, source)
        for target in targets:
            there = _child(package, target)
            if here and there and here != there:
                graph.setdefault(here, set()).add(there)
    return graph


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("monitor")))
def test_stage_imports_flow_one_way(module: str) -> None:
    banned = FORBIDDEN.get(_stage(module), set())
    wrong = sorted(name for name in _runtime_imports(MODULES[module]) if _stage(name) in banned)
    assert not wrong, f"{module} ({_stage(module)}) must not import {wrong}"


@pytest.mark.parametrize("root", PACKAGES)
def test_no_module_import_cycles(root: str) -> None:
    graph = {m: {n for n in targets if n.split(".")[0] == root} for m, targets in GRAPH.items() if m.startswith(root)}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("package", sorted(m for m in MODULES if _is_package(m)))
def test_no_package_import_cycles(package: str) -> None:
    cycle = _cycle(_package_graph(package))
    assert cycle is None, f"import cycle between the parts of {package}: " + " -> ".join(cycle or [])


def test_the_cycle_checks_see_cycles() -> None:
    """The checks find a module cycle, a package cycle and a cycle closed under `if TYPE_CHECKING:`."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    saved = dict(GRAPH)
    try:
        GRAPH["evaluators.sdk.base"] = GRAPH["evaluators.sdk.base"] | {"evaluators.traces.model"}
        GRAPH["evaluators.traces.model"] = GRAPH["evaluators.traces.model"] | {"evaluators.sdk.result"}
        assert _cycle(_package_graph("evaluators")) is not None
    finally:
        GRAPH.clear()
        GRAPH.update(saved)
    source = "if TYPE_CHECKING:\n    from monitor.metrics.windows import WindowSnapshot\n"
    assert "monitor.metrics.windows" in _imports_of(source, "monitor.alerting.probe", False, type_checking=True)
    assert "monitor.metrics.windows" not in _imports_of(source, "monitor.alerting.probe", False, type_checking=False)


@pytest.mark.integration
def test_receiver_tests_load_no_engine() -> None:
    engine = "sorted(m for m in sys.modules if m.startswith('monitor.engine'))"
    probe = f"import sys, {', '.join(RECEIVER_TESTS)}; print({engine})"
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


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
