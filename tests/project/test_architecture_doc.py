"""docs/architecture.md names only what exists: every path and every dotted name of `monitor` or `evaluators` it
writes in backticks resolves in this tree (a path to a file or folder, a dotted name to an importable module or
an attribute of one), so the page cannot name a module that moved.

Paths are written from the project root (`monitor/engine/pool.py`, not `engine/pool.py`); dotted names in full
(`monitor.engine.pool.EvaluationPool`). Bare class names and the ASCII picture are not checked.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("monitor", "evaluators")

FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"^(?:monitor|evaluators)(?:\.\w+)*$")
PATH = re.compile(r"^[\w.-]+(?:/[\w.-]+)*/?$")


def references(text: str) -> list[str]:
    """The backticked spans of `text` (outside fenced blocks) that name a path or a dotted name of the packages."""
    spans = CODE.findall(FENCE.sub("", text))
    return [s for s in spans if DOTTED.match(s) or ("/" in s and PATH.match(s))]


def problem(reference: str) -> str | None:
    """Why `reference` does not resolve in this tree, or None when it does."""
    if "/" in reference:
        return None if (ROOT / reference).exists() else "no such file or folder (paths start at the project root)"
    parts = reference.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        try:
            target: object = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name) and exc.name.split(".")[0] in PACKAGES:
                continue  # this prefix is no module: try a shorter one and look the rest up as attributes
            raise
        for attribute in parts[end:]:
            if not hasattr(target, attribute):
                return f"{name} has no {'.'.join(parts[end:])}"
            target = getattr(target, attribute)
        return None
    return "no such module"


DOC_REFERENCES = references(DOC.read_text(encoding="utf-8"))


def test_the_doc_names_modules() -> None:
    """The extraction finds what the page names (a regex that matched nothing would check nothing)."""
    assert len(DOC_REFERENCES) >= 50
    assert "monitor.daemon.Daemon" in DOC_REFERENCES
    assert "tests/project/test_layering.py" in DOC_REFERENCES


@pytest.mark.parametrize("reference", sorted(set(DOC_REFERENCES)))
def test_every_named_module_exists(reference: str) -> None:
    assert problem(reference) is None, f"docs/architecture.md names `{reference}`: {problem(reference)}"


def test_the_check_sees_what_moved() -> None:
    """Names from before a move, short paths and missing attributes are caught; URL paths and words are not names."""
    assert problem("monitor.results.store") is not None  # monitor/results became monitor/store and monitor/review
    assert problem("monitor/results/store.py") is not None
    assert problem("engine/pool.py") is not None
    assert problem("monitor.engine.pool.WorkerPool") is not None
    assert problem("monitor.engine.pool.EvaluationPool.no_such_method") is not None
    assert problem("monitor.engine.pool.EvaluationPool.submit") is None
    assert problem("monitor/store/postgres/") is None
    text = "`/v1/traces`, `agent-monitor rules`, `quiet_period`, `monitor.store.rows.ResultRow`, `monitor/cli.py`"
    assert references(text) == ["monitor.store.rows.ResultRow", "monitor/cli.py"]


def test_readme_links_the_doc() -> None:
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")
