"""What each make target installs (`make -n` in a fresh checkout: the commands, none of them run)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # each test starts a process or a server

ROOT = Path(__file__).resolve().parents[2]


def planned(target: str, tmp_path: Path) -> str:
    """The commands `make TARGET` would run with no virtualenv yet (a new one under tmp_path)."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    venv = tmp_path / "venv"
    result = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_make_run_installs_the_runtime_dependencies_only(tmp_path: Path) -> None:
    commands = planned("run", tmp_path)
    assert "pip install --quiet -e .\n" in commands and "[dev]" not in commands
    assert "agent-monitor run" in commands
    assert "apt-get" not in commands and "phoenix" not in commands


@pytest.mark.parametrize("target", ["test", "lint", "bench"])
def test_test_lint_and_bench_add_the_dev_extras(target: str, tmp_path: Path) -> None:
    commands = planned(target, tmp_path)
    assert "pip install --quiet -e .\n" in commands and "pip install --quiet -e '.[dev]'" in commands


def test_make_test_installs_everything_it_needs(tmp_path: Path) -> None:
    commands = planned("test", tmp_path)
    for package in ("prometheus", "prometheus-alertmanager", "chromium", "postgresql"):
        assert f" {package}" in commands  # apt-get, when missing
    assert "arize-phoenix==" in commands and "pytest" in commands
