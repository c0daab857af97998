"""The `evaluators` SDK is a typed package (PEP 561): its py.typed marker exists and ships in the distribution."""

from __future__ import annotations

import tomllib
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
