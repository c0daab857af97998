"""The `agent-monitor` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from monitor.commands import (
    calibrate_cmd,
    check_config,
    compare_cmd,
    dataset_cmd,
    evaluate_cmd,
    evaluators_cmd,
    health_cmd,
    inspect_cmd,
    poll_cmd,
    review_cmd,
    rules_cmd,
    signatures_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-monitor",
        description="Watch AI agents in production through their OpenTelemetry traces.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    run_parser = subparsers.add_parser("run", help="start the daemon")
    run_parser.add_argument(
        "--config", help=f"YAML config file (default: ${health_cmd.CONFIG_ENV}, else the embedded default)"
    )
    run_parser.set_defaults(handler=_run_daemon)
    inspect_cmd.add_parser(subparsers)
    check_config.add_parser(subparsers)
    evaluate_cmd.add_parser(subparsers)
    compare_cmd.add_parser(subparsers)
    dataset_cmd.add_parser(subparsers)
    evaluators_cmd.add_parser(subparsers)
    health_cmd.add_parser(subparsers)
    rules_cmd.add_parser(subparsers)
    review_cmd.add_parser(subparsers)
    signatures_cmd.add_parser(subparsers)
    calibrate_cmd.add_parser(subparsers)
    poll_cmd.add_parser(subparsers)
    return parser


def _run_daemon(args: argparse.Namespace) -> int:
    """Check the config as `check-config` does (same messages, exit 2), then serve until stopped."""
    import asyncio
    import sqlite3

    from monitor.config import DEFAULT_SOURCE, ConfigError, load_located
    from monitor.daemon import STARTUP_ERRORS
    from monitor.logutil import configure_logging
    from monitor.preflight import preflight

    path = health_cmd.config_path(args)
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
    parser = build_parser()
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
