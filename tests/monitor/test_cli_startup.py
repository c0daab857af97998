"""`agent-monitor`'s start-up imports what the command needs: `--help` none of the commands' modules, `inspect` the
trace views and decoders only (not the daemon, the judges' client, the servers, the store drivers or the config
models), and every command's own `--help` still works and reads as before."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import evaluators
from evaluators import traces
from monitor.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
ONE_FILE = ROOT / "tests/fixtures/corpus/oi_openai__tool_agent/traces_0001.json"
SESSIONS = ROOT / "tests/fixtures/corpus/oi_openai__session_support"
# what no light command may load: the daemon, its servers and drivers, the judges' client, the scheduler
HEAVY = (
    "grpc",
    "aiohttp",
    "google.genai",
    "psycopg",
    "prometheus_client",
    "apscheduler",
    "monitor.daemon",
)
_PROBE = """
import json, sys
from monitor.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _run(*argv: str) -> tuple[int, str, set[str]]:
    """Run `agent-monitor ARGV` in a fresh interpreter: its exit code, output and the modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120, check=True, cwd=ROOT
    )
    out, _, last = done.stdout.rstrip("\n").rpartition("\n")
    answer = json.loads(last)
    return answer["code"], out, set(answer["modules"])


def _loaded(modules: set[str], *names: str) -> list[str]:
    return sorted(m for m in modules for n in names if m == n or m.startswith(n + "."))


@pytest.mark.integration
def test_help_imports_none_of_the_commands() -> None:
    code, out, modules = _run("--help")
    assert code == 0 and all(f"    {name}" in out for name, _, _ in COMMANDS)
    assert _loaded(modules, *HEAVY, "monitor.commands", "monitor.config", "evaluators", "pydantic", "yaml") == []


# beyond HEAVY, what inspect does not need: the config models, the store's detail rows, the evaluator API
NOT_FOR_INSPECT = ("monitor.config", "monitor.store.trace_detail", "evaluators.sdk", "evaluators.judges")


@pytest.mark.integration
def test_inspect_imports_only_the_trace_views_and_decoders() -> None:
    code, out, modules = _run("inspect", str(ONE_FILE))
    assert code == 0 and out.startswith("trace ")
    assert "monitor.commands.inspect_cmd" in modules and "evaluators.traces.loader" in modules
    assert _loaded(modules, *HEAVY, *NOT_FOR_INSPECT, "pydantic", "genai_prices") == []


@pytest.mark.integration
def test_inspect_of_sessions_adds_only_the_price_table() -> None:
    """A session's turns are priced (its cost), which loads the price table (genai_prices, on pydantic)."""
    code, out, modules = _run("inspect", str(SESSIONS))
    assert code == 0 and "\nsession " in out
    assert "evaluators.pricing" in modules
    assert _loaded(modules, *HEAVY, *NOT_FOR_INSPECT) == []


def test_the_listed_help_is_what_each_command_declares() -> None:
    """`agent-monitor --help` (no command declared) reads exactly as with every command declared."""
    assert build_parser(()).format_help() == build_parser().format_help()


@pytest.mark.parametrize("argv", [[name] for name, _, _ in COMMANDS] + [["dataset", "export"]], ids=" ".join)
def test_every_command_shows_its_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: agent-monitor {' '.join(argv)} ")


def test_no_command_prints_the_help_and_an_unknown_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["nope"])
    assert exited.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_the_sdk_package_exports_every_trace_name_lazily() -> None:
    assert set(traces.__all__) <= set(evaluators.__all__)
    homes = [importlib.import_module(f"evaluators.{home}") for home in ("traces", "sdk", "signatures")]
    for name in evaluators.__all__:
        assert getattr(evaluators, name) is next(getattr(m, name) for m in homes if name in m.__all__), name
    with pytest.raises(AttributeError):
        evaluators.no_such_name  # noqa: B018
