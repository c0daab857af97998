"""`.gitignore` ignores nothing the repository tracks (deploy/monitor.yaml, the generated rules, fixtures...)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # each test starts a process or a server

ROOT = Path(__file__).resolve().parents[2]


def test_no_tracked_file_is_ignored() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(
        ["git", "ls-files", "--cached", "--ignored", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "", f"tracked but matched by .gitignore:\n{result.stdout}"
