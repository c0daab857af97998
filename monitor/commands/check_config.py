"""`agent-monitor check-config FILE`: validate a config file (with AGENT_MONITOR_* overrides) and summarize it."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ..config import ConfigError, MonitorConfig, load_config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-config",
        help="validate a config file and print a one-line summary",
        description="Load FILE as the daemon would (applying AGENT_MONITOR_* environment overrides) and "
        "report every problem as file:line: section.field: message. Exit status 0 when valid, 2 when not.",
    )
    parser.add_argument("path", metavar="FILE", help="YAML config file")
    parser.add_argument(
        "--no-env", action="store_true", help="ignore AGENT_MONITOR_* and GEMINI_API_KEY/GOOGLE_API_KEY variables"
    )
    parser.set_defaults(handler=run)


def summary(config: MonitorConfig) -> str:
    """One line: listening ports, evaluators, metrics windows."""
    receivers = config.receivers
    listening = [
        f"{kind} :{getattr(receivers, kind).port}" for kind in ("grpc", "http") if getattr(receivers, kind).enabled
    ]
    extras = (", tls" if receivers.tls.enabled else "") + (", bearer auth" if receivers.auth.token() else "")
    if config.evaluators is None:
        evaluators = "default evaluator set"
    else:
        active = sum(entry.enabled for entry in config.evaluators)
        evaluators = f"{active} evaluator{'' if active == 1 else 's'}"
        if active != len(config.evaluators):
            evaluators += f" ({len(config.evaluators) - active} disabled)"
    windows = ", ".join(window.label for window in config.metrics.windows)
    return (
        f"receivers {', '.join(listening) or 'none'}{extras}; {evaluators}; "
        f"metrics :{config.metrics.port} windows {windows}"
    )


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        config = load_config(args.path, env={} if getattr(args, "no_env", False) else None)
    except ConfigError as exc:
        print(exc, file=err)
        count = len(exc.problems)
        print(f"{args.path}: invalid ({count} problem{'' if count == 1 else 's'})", file=err)
        return 2
    print(f"{args.path}: OK", file=out)
    print(summary(config), file=out)
    return 0
