"""The `evaluators` SDK is a typed package (PEP 561): its py.typed marker exists and ships in the distribution; the
store's migrations ship too."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_py_typed_marker_is_in_the_source_package() -> None:
    marker = ROOT / "evaluators" / "py.typed"
    assert marker.is_file()
    assert (ROOT / "evaluators" / "__init__.py").is_file()


def test_py_typed_marker_is_declared_as_package_data() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["evaluators"]
    assert "evaluators*" in setuptools["packages"]["find"]["include"]


def test_mypy_checks_both_packages() -> None:
    assert set(_pyproject()["tool"]["mypy"]["packages"]) == {"evaluators", "monitor"}


def test_the_store_migrations_ship_in_the_distribution() -> None:
    """Alembic reads monitor/store/migrations from the installed package: its Python files come as namespace
    packages (packages.find keeps namespaces, pyproject's default), the rest (the revision template) as package
    data."""
    setuptools = _pyproject()["tool"]["setuptools"]
    assert setuptools["packages"]["find"].get("namespaces", True)
    monitor = ROOT / "monitor"
    files = [p for p in (monitor / "store" / "migrations").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    data = [p.relative_to(monitor).as_posix() for p in files if p.suffix != ".py"]
    assert data and all(any(fnmatch(f, pattern) for pattern in setuptools["package-data"]["monitor"]) for f in data)
