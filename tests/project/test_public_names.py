"""Public vs internal: a `monitor` stage uses another stage only through its public modules, and `monitor` uses only
the names the evaluators SDK exports.

A package's `__all__` names its public modules (and, in a package that re-exports names, those names); the
modules it does not name are internal to the package. Inside its own stage a module may import anything; the
top-level modules (`monitor.daemon`, `monitor.cli`, ...) are the wiring and are public themselves. A name of the
SDK is public when the `__all__` of the module it is imported from lists it, or the `__all__` of a package above
that module exports the same object.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.project.test_layering import MODULES, ROOT, _ancestors, _is_package, _module_name, _stage

MONITOR_PACKAGES = sorted(m for m in MODULES if m.startswith("monitor.") and _is_package(m))


def _all_of_source(source: str) -> list[str] | None:
    """The names a module's `__all__` lists (`__all__ = [...]` and `__all__ += [...]` of literals), or None."""
    names: list[str] | None = None
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            names = [*(names or []), *ast.literal_eval(node.value)]
    return names


def _all_of(module: str) -> list[str]:
    return _all_of_source(MODULES[module].read_text()) or []


def _import_sites(source: str, me: str, is_package: bool) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) for every import in `source` (in functions and under `if TYPE_CHECKING:` too): `name` is
    the name imported from `module`, or None when a module itself is imported."""
    package = me if is_package else me.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                if f"{module}.{alias.name}" in MODULES:
                    yield node.lineno, f"{module}.{alias.name}", None
                else:
                    yield node.lineno, module, alias.name


def _monitor_problem(me: str, module: str, name: str | None) -> str | None:
    """Why `me` must not import `name` from `module` (a module of `monitor`), or None if it may."""
    if module not in MODULES or module == "monitor" or _stage(module) == _stage(me):
        return None
    parts = module.split(".")
    for i in range(2, len(parts)):
        parent = ".".join(parts[:i])
        if _is_package(parent) and parts[i] not in _all_of(parent):
            return f"{'.'.join(parts[: i + 1])} is internal to {parent} (not in its __all__)"
    if name is not None and name != "*" and _is_package(module) and name not in _all_of(module):
        return f"{name} is not in {module}.__all__"
    if name is not None and name.startswith("_") and not name.startswith("__"):
        return f"{module}.{name} is private"
    return None


def _sdk_problem(module: str, name: str | None) -> str | None:
    """Why `monitor` must not import `name` from `module` (a module of `evaluators`), or None if it may."""
    imported = importlib.import_module(module)
    if name is None:
        parent, _, leaf = module.rpartition(".")
        if parent and leaf in getattr(importlib.import_module(parent), "__all__", ()):
            return None  # a name its package exports (`evaluators.judges.prepare` is also a module's name)
        declared = hasattr(imported, "__all__") or not parent
        return None if declared else f"{module} is not a public module of the SDK (it has no __all__)"
    if name in getattr(imported, "__all__", ()):
        return None
    value = getattr(imported, name, None)
    for package in _ancestors(module):
        exported = importlib.import_module(package)
        if name in getattr(exported, "__all__", ()) and getattr(exported, name, None) is value:
            return None
    return f"{module}.{name} is in no __all__ of the SDK"


def _problems(path: Path) -> list[str]:
    me = _module_name(path)
    found = []
    for line, module, name in _import_sites(path.read_text(), me, path.name == "__init__.py"):
        root = module.split(".")[0]
        if root == "monitor":
            problem = _monitor_problem(me, module, name)
        elif root == "evaluators":
            problem = _sdk_problem(module, name)
        else:
            continue
        if problem:
            found.append(f"{path.relative_to(ROOT)}:{line}: {problem}")
    return found


@pytest.mark.parametrize("package", MONITOR_PACKAGES)
def test_every_package_says_what_is_public(package: str) -> None:
    """Each subpackage has a docstring and an `__all__` whose every entry is one of its modules or one of its
    names (a misspelt entry would make a module internal without anyone noticing)."""
    source = MODULES[package].read_text()
    assert ast.get_docstring(ast.parse(source)), f"{package} has no docstring"
    listed = _all_of_source(source)
    assert listed, f"{package} has no __all__"
    defined = {
        alias.asname or alias.name
        for node in ast.parse(source).body
        if isinstance(node, ast.ImportFrom | ast.Import)
        for alias in node.names
    }
    unknown = [n for n in listed if f"{package}.{n}" not in MODULES and n not in defined]
    assert not unknown, f"{package}.__all__ lists what is neither a module nor a name of the package: {unknown}"
    assert len(listed) == len(set(listed)), f"{package}.__all__ lists a name twice"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("monitor")))
def test_imports_use_only_public_modules_and_names(module: str) -> None:
    problems = _problems(MODULES[module])
    assert not problems, "\n".join(problems)


def test_the_checks_see_internal_imports() -> None:
    """An internal module of another stage, a name a package does not export, a private name and a name the SDK
    does not export are found; the same imports inside the stage, and public ones, are not."""
    assert _monitor_problem("monitor.web.app", "monitor.engine.batch_run", "BatchRun")
    assert _monitor_problem("monitor.daemon", "monitor.store.postgres.deadline", None)
    assert _monitor_problem("monitor.daemon", "monitor.web.pages", "review_page_routes")
    assert _monitor_problem("monitor.daemon", "monitor.metrics", "UNLISTED")
    assert _monitor_problem("monitor.daemon", "monitor.store.writer", "_private")
    assert _monitor_problem("monitor.engine.pool", "monitor.engine.batch_run", "BatchRun") is None
    assert _monitor_problem("monitor.daemon", "monitor.store.writer", "QueuedResultStore") is None
    assert _monitor_problem("monitor.daemon", "monitor.metrics", "MetricsExporter") is None
    assert _monitor_problem("monitor.cli", "monitor.daemon", "Daemon") is None
    assert _sdk_problem("evaluators.traces.otlp_json", "attributes_from_json")  # not in the module's __all__
    assert _sdk_problem("evaluators.traces.builder", None)  # a module that declares no public names
    assert _sdk_problem("evaluators.traces.model", "Trace") is None  # exported by evaluators.traces
    assert _sdk_problem("evaluators.judges.engine", "JudgeEngine") is None  # its module's __all__
    sites = list(_import_sites("from . import writer\nfrom .rows import X\n", "monitor.store.sqlite", False))
    assert sites == [(1, "monitor.store.writer", None), (2, "monitor.store.rows", "X")]
