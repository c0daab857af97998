"""Fixtures of the unit tests."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from monitor.commands import check_config
from tests.unit.test_config import write


@pytest.fixture
def check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[[str], tuple[int, str, str, Path]]:
    """check-config on a config text: (exit code, stdout, stderr, path)."""

    def run(text: str) -> tuple[int, str, str, Path]:
        path = write(tmp_path, text)
        code = check_config.run(argparse.Namespace(path=str(path), no_env=True))
        out, err = capsys.readouterr()
        return code, out, err, path

    return run
