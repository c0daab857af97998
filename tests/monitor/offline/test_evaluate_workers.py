"""`agent-monitor evaluate --workers N`: the files evaluated in several processes give the report one process gives,
byte for byte (table and JSON), errors included; inputs the shards cannot split run in one process."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monitor.commands import evaluate_cmd
from monitor.offline.parallel import run_sharded, shard_plan
from monitor.offline.spec import default_selection
from tests.bench.trace_files import write_trace_files
from tests.conftest import CORPUS

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not available")


def evaluate(*paths: Path | str, workers: int | None, fmt: str = "json", worst: int = 50) -> tuple[int, str, str]:
    args = argparse.Namespace(
        paths=[str(p) for p in paths], spec=None, dataset=None, format=fmt, worst=worst, workers=workers
    )
    out, err = io.StringIO(), io.StringIO()
    code = evaluate_cmd.run(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 agent traces in 6 files, protobuf and OTLP-JSON in turn."""
    folder = tmp_path_factory.mktemp("synthetic")
    write_trace_files(folder, 120, per_file=20)
    return folder


def test_shards_split_the_files_in_order(synthetic: Path) -> None:
    shards = shard_plan([str(CORPUS), str(synthetic)], 3)
    assert shards is not None and len(shards) == 3
    files = [f for shard in shards for f in shard]
    assert files[-6:] == [str(p) for p in sorted(synthetic.iterdir())]
    assert shard_plan([str(synthetic)], 1) is None
    assert shard_plan([str(synthetic)], None) is None  # auto: too small to repay a worker's start-up
    assert shard_plan([str(synthetic), str(synthetic / "missing.pb")], 2) is None  # one process reports it


@pytest.mark.integration
def test_the_shards_run_apart_and_agree_with_one_process(synthetic: Path) -> None:
    """The corpus (failures, sessions, logs joined to spans) and synthetic traces: same JSON and table with 1, 2
    and 3 processes; the sharded run really ran sharded (no fall-back)."""
    paths = [CORPUS, synthetic]
    shards = shard_plan([str(p) for p in paths], 2)
    assert shards is not None
    report = run_sharded(shards, None, None, None, default_selection(), worst=50, signature_rules=())
    assert report is not None and not isinstance(report, Exception)
    assert report.trace_count > 120 and report.signatures and report.session_count
    one = evaluate(*paths, workers=1)
    assert one[0] in (0, 1) and one[1]
    assert evaluate(*paths, workers=2) == one
    assert evaluate(*paths, workers=3) == one
    assert evaluate(*paths, workers=2, fmt="table") == evaluate(*paths, workers=1, fmt="table")


@pytest.mark.integration
def test_a_malformed_file_is_reported_as_by_one_process(synthetic: Path, tmp_path: Path) -> None:
    for file in sorted(synthetic.iterdir()):
        (tmp_path / file.name).write_bytes(file.read_bytes())
    (tmp_path / "traces_0003.json").write_text('{"resourceSpans": [{"scopeSpans": 7}]}')
    (tmp_path / "traces_0004.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    one = evaluate(tmp_path, workers=1)
    assert one[0] == 2 and "traces_0003.json" in one[2] and not one[1]
    assert evaluate(tmp_path, workers=3) == one


@pytest.mark.integration
def test_what_the_shards_cannot_split_runs_in_one_process(synthetic: Path) -> None:
    """Log records in one shard for spans in another, and one trace's spans in two shards: the same report."""
    case = CORPUS / "adk1_native__tool_agent"
    logs_apart = [case / "logs_0001.pb", case / "traces_0001.pb"]
    assert run_sharded([[str(p)] for p in logs_apart], None, None, None, default_selection(), worst=10,
                       signature_rules=()) is None  # fmt: skip
    assert evaluate(*logs_apart, workers=2) == evaluate(*logs_apart, workers=1)
    twice = [synthetic / "traces_0000.pb", synthetic / "traces_0000.pb"]
    assert evaluate(*twice, workers=2) == evaluate(*twice, workers=1)


@pytest.mark.integration
def test_the_command_loads_no_judge_client() -> None:
    """google-genai (about a third of the command's imports) loads only when a judge runs."""
    code = "import sys, monitor.commands.evaluate_cmd; print('google.genai' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


def test_workers_option() -> None:
    parser = argparse.ArgumentParser()
    evaluate_cmd.add_parser(parser.add_subparsers())
    parsed: Any = parser.parse_args(["evaluate", "x.json"])
    assert parsed.workers is None
    assert parser.parse_args(["evaluate", "x.json", "--workers", "3"]).workers == 3
    assert parser.parse_args(["evaluate", "x.json", "--workers", "auto"]).workers is None
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "x.json", "--workers", "0"])
