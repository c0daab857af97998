"""`agent-monitor rules`: write the Prometheus rules of a config (the evaluators' `alert:` and `slo:` blocks and
the `alerting:` section) as a rule file or as a Prometheus Operator `PrometheusRule`.

The config is found as `run` finds it (--config, else $AGENT_MONITOR_CONFIG, else the embedded default, with the
AGENT_MONITOR_* overrides unless --no-env); an invalid one is reported as `check-config` reports it (exit 2).
The evaluators are built as `run` builds them (modules imported), for the `evaluator` label each one gets.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from monitor.alerting.rules import FORMATS, render
from monitor.config import DEFAULT_SOURCE, ConfigError, load_located
from monitor.engine.evaluator_setup import build_evaluators

from . import check_config, daemon_address


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rules",
        help="write Prometheus alerting and recording rules from the config",
        description="Write the Prometheus rules of the config: a pass-ratio alert per evaluator with `alert:`, "
        "multi-window multi-burn-rate alerts and recording rules per evaluator with `slo:`, and the daemon's "
        "health alerts (docs/alerting.md). `--format prometheus` writes a rule file (rule_files: in "
        "prometheus.yml); `--format prometheus-operator` a PrometheusRule resource (pipe it into "
        f"`kubectl apply -f -`). The config: --config, else ${daemon_address.CONFIG_ENV}, else the embedded default. "
        "Exit 0 on success, 2 on an invalid config.",
    )
    parser.add_argument(
        "--config", help=f"YAML config file (default: ${daemon_address.CONFIG_ENV}, else the embedded default)"
    )
    parser.add_argument("--format", choices=FORMATS, default="prometheus", help="output format (default prometheus)")
    parser.add_argument("--namespace", help="metadata.namespace of the PrometheusRule (prometheus-operator only)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of standard output")
    parser.add_argument(
        "--no-env", action="store_true", help="ignore AGENT_MONITOR_* variables (reproducible output from the file)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    path = daemon_address.config_path(args)
    try:
        config, locator = load_located(path, env={} if getattr(args, "no_env", False) else None)
        # The evaluators are built (modules imported) for their metric labels, as `run` labels them.
        built, problems = build_evaluators(config.evaluator_entries(), config.pricing.overrides())
        if problems:
            raise locator.error(problems)
    except ConfigError as exc:
        return check_config.report_invalid(path or DEFAULT_SOURCE, exc, err)
    labelled = [(evaluator.label, evaluator.entry) for evaluator in built]
    text = render(config, args.format, args.namespace, source=path or "", evaluators=labelled)
    if args.output:
        target = Path(args.output)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    else:
        out.write(text)
    return 0
