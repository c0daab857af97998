"""The `agent-monitor` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .commands import inspect_cmd


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-monitor",
        description="Watch AI agents in production through their OpenTelemetry traces.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    run_parser = subparsers.add_parser("run", help="start the daemon")
    run_parser.add_argument("--config", help="YAML config file (default: the embedded default)")
    run_parser.set_defaults(handler=_run_daemon)
    inspect_cmd.add_parser(subparsers)
    return parser


def _run_daemon(args: argparse.Namespace) -> int:
    print("agent-monitor: the daemon arrives in step 3 (issue 4); use `agent-monitor inspect FILE` for now.")
    return 0


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
