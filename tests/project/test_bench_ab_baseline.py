"""The A/B bench against a baseline commit (tests/bench/bench_ab_baseline.py): its baseline tree from git (a tiny
repository made here), the venv stamp, the pins, and the medians and ratios it prints. No venv is built here."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from tests.bench.baseline_tree import (
    STAMP_NAME,
    BaselineError,
    extract,
    pins_of,
    resolve,
    stamp_matches,
    stamp_text,
)
from tests.bench.bench_ab_baseline import Figures, medians, ratios, summary_lines


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository of two commits: pyproject.toml and a package at the first, a change at the second."""
    repo = tmp_path / "repo"
    (repo / "monitor").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (repo / "monitor" / "__init__.py").write_text("VERSION = 1\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    _git(repo, "tag", "first")
    (repo / "monitor" / "__init__.py").write_text("VERSION = 2\n")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "second")
    return repo


@pytest.mark.integration
def test_resolve_gives_the_full_sha_and_a_clear_error_for_a_ref_the_clone_lacks(repo: Path) -> None:
    assert resolve("first", repo) == _git(repo, "rev-parse", "first")
    assert len(resolve("first", repo)) == 40
    with pytest.raises(BaselineError, match="'ea3cc99' is not a commit in this clone"):
        resolve("ea3cc99", repo)


@pytest.mark.integration
def test_extract_writes_the_commits_tree_not_the_working_trees(repo: Path, tmp_path: Path) -> None:
    sha = resolve("first", repo)
    src = tmp_path / "cache" / sha / "src"
    extract(sha, src, repo)
    assert (src / "monitor" / "__init__.py").read_text() == "VERSION = 1\n"
    assert not (src / ".git").exists()
    assert not src.with_name("src.partial").exists()
    (src / "monitor" / "__init__.py").write_text("kept\n")
    extract(sha, src, repo)  # an extracted tree is reused as it is
    assert (src / "monitor" / "__init__.py").read_text() == "kept\n"


def test_a_venv_is_reused_only_when_its_stamp_matches_sha_interpreter_source_and_pins(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    src = tmp_path / "src"
    stamp = stamp_text("a" * 40, "3.11.7", src, "grpcio==1.0\n")
    assert not stamp_matches(venv, stamp)  # no stamp yet: the install did not finish
    (venv / STAMP_NAME).write_text(stamp)
    assert stamp_matches(venv, stamp)
    for other in (
        stamp_text("b" * 40, "3.11.7", src, "grpcio==1.0\n"),
        stamp_text("a" * 40, "3.12.1", src, "grpcio==1.0\n"),
        stamp_text("a" * 40, "3.11.7", tmp_path / "moved", "grpcio==1.0\n"),
        stamp_text("a" * 40, "3.11.7", src, "grpcio==1.1\n"),
    ):
        assert not stamp_matches(venv, other)
    (venv / "bin" / "python").unlink()
    assert not stamp_matches(venv, stamp)


def test_pins_keep_released_versions_only() -> None:
    freeze = "grpcio==1.76.0\n-e /src/agent-monitor\nAgent-Monitor==0.1.0\nlocal @ file:///tmp/x.whl\nprotobuf==6.1\n"
    assert pins_of(freeze) == "grpcio==1.76.0\nprotobuf==6.1\n"


def test_medians_leave_out_nan_and_ratios_are_current_over_baseline() -> None:
    baseline = [Figures(600.0, 0.5, 2.0), Figures(500.0, math.nan, 1.8), Figures(700.0, 0.7, 2.2)]
    current = [Figures(300.0, 0.4, 3.0), Figures(400.0, 0.6, 2.6)]
    assert medians(baseline) == Figures(600.0, 0.6, 2.0)
    assert medians(current) == Figures(350.0, 0.5, 2.8)
    ratio = ratios(medians(current), medians(baseline))
    assert ratio.evaluated_per_second == pytest.approx(350 / 600)
    assert ratio.cpu_share == pytest.approx(0.5 / 0.6)
    assert ratio.cpu_ms_per_trace == pytest.approx(1.4)
    assert math.isnan(ratios(Figures(1.0, 1.0, 1.0), Figures(0.0, math.nan, 1.0)).evaluated_per_second)
    assert math.isnan(medians([Figures(math.nan, math.nan, math.nan)]).cpu_share)


def test_the_summary_prints_both_medians_and_the_ratio_of_each_figure() -> None:
    lines = summary_lines("baseline ea3cc99", [Figures(600.0, 0.5, 2.0)], [Figures(396.0, 0.45, 2.58)])
    assert "baseline ea3cc99" in lines[0] and "current/baseline" in lines[0]
    rate, share, cpu = lines[1:]
    assert rate.split()[-3:] == ["600", "396", "0.66x"]
    assert share.split()[-3:] == ["50%", "45%", "0.90x"]
    assert cpu.split()[-3:] == ["2.000", "2.580", "1.29x"]
