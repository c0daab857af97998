"""The `agent-monitor` command line.

A command's module (and what it imports: the config models, the judges' client, the store drivers...) is imported
only when that command runs or shows its own `--help`: `agent-monitor --help` lists the commands from `COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Collection, Sequence

# (name, module declaring its arguments with `add_parser(subparsers)`, one-line help), in `--help` order. The
# help is the one the module declares (a test keeps them equal); `run` is declared here.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("run", __name__, "start the daemon"),
    ("inspect", "monitor.commands.inspect_cmd", "decode OTLP trace files and print each trace's normalized view"),
    (
        "check-config",
        "monitor.commands.check_config",
        "validate a config file, print a summary and the resulting evaluator set",
    ),
    ("evaluate", "monitor.commands.evaluate_cmd", "run evaluators over trace files and summarize the results"),
    (
        "compare",
        "monitor.commands.compare_cmd",
        "compare a candidate version's traces with a baseline's, evaluator by evaluator",
    ),
    (
        "dataset",
        "monitor.commands.dataset_cmd",
        "turn stored failures and reviewers' verdicts into test cases (a dataset for evaluate --dataset)",
    ),
    ("evaluators", "monitor.commands.evaluators_cmd", "list the available evaluators"),
    ("health", "monitor.commands.health_cmd", "exit 0 when the daemon answers /healthz (for container health checks)"),
    ("rules", "monitor.commands.rules_cmd", "write Prometheus alerting and recording rules from the config"),
    (
        "review",
        "monitor.commands.review_cmd",
        "list recent evaluation results, one trace, a breakdown or the evaluators",
    ),
    ("signatures", "monitor.commands.signatures_cmd", "failure signatures by impact, or one signature and its traces"),
    (
        "changes",
        "monitor.commands.changes_cmd",
        "drift: each agent's signals that changed against its own baseline, largest effect first",
    ),
    (
        "explain",
        "monitor.commands.explain_cmd",
        "what sets an evaluator's failures (a signature, a drift window) apart: model, version, tool, ...",
    ),
    ("calibrate", "monitor.commands.calibrate_cmd", "the threshold of a scored evaluator that matches reviewers best"),
    (
        "poll",
        "monitor.commands.poll_cmd",
        "pull a configured source once over a time range and evaluate what it returns",
    ),
)


def build_parser(declared: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The command line. The commands named in `declared` (every command when None) declare their arguments,
    which imports their modules; the others are only listed, with their one-line help."""
    parser = argparse.ArgumentParser(
        prog="agent-monitor",
        description="Watch AI agents in production through their OpenTelemetry traces.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, summary in COMMANDS:
        if declared is None or name in declared:
            _declarer(module)(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def _declarer(module: str) -> Callable[[argparse._SubParsersAction], None]:
    return add_parser if module == __name__ else importlib.import_module(module).add_parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command `argv` names: its first argument that is not an option (the top level has only -h)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """`agent-monitor run`."""
    from monitor.commands import daemon_address

    run_parser = subparsers.add_parser("run", help="start the daemon")
    run_parser.add_argument(
        "--config", help=f"YAML config file (default: ${daemon_address.CONFIG_ENV}, else the embedded default)"
    )
    run_parser.set_defaults(handler=_run_daemon)


def _run_daemon(args: argparse.Namespace) -> int:
    """Check the config as `check-config` does (same messages, exit 2), then serve until stopped."""
    import asyncio
    import sqlite3

    from monitor.commands import check_config, daemon_address
    from monitor.config import DEFAULT_SOURCE, ConfigError, load_located
    from monitor.daemon import STARTUP_ERRORS
    from monitor.logutil import configure_logging
    from monitor.preflight import preflight

    path = daemon_address.config_path(args)
    try:
        config, locator = load_located(path, env=None)
        prepared = preflight(config, locator)
    except ConfigError as exc:
        return check_config.report_invalid(path or DEFAULT_SOURCE, exc, sys.stderr)
    configure_logging(config.logging.level, config.logging.format)
    try:
        code = asyncio.run(_serve(config, prepared))
    except (*STARTUP_ERRORS, sqlite3.Error) as exc:
        print(f"agent-monitor: cannot start: {exc}", file=sys.stderr)
        code = 1
    _exit_past_stuck_evaluators(code)
    return code


def _exit_past_stuck_evaluators(code: int) -> None:
    """Exit now when an in-process evaluation thread is stuck in an evaluator: the interpreter would join it
    at exit and never end (a thread cannot be killed). Everything else has been shut down and flushed."""
    import logging
    import os

    from monitor.engine.pool import stuck_evaluation_threads

    stuck = stuck_evaluation_threads()
    if not stuck:
        return
    logging.getLogger("monitor.cli").error(
        "an evaluator is still running on %s and cannot be stopped: exiting without waiting for it", ", ".join(stuck)
    )
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _serve(config, prepared) -> int:
    from monitor.daemon import Daemon

    daemon = Daemon(config, prepared)
    return await daemon.run_until_stopped()


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = command_of(argv)
    parser = build_parser(() if command is None else (command,))
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
