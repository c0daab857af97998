"""`agent-monitor evaluators list [--json]`: the evaluator catalog (builtins, then installed entry points)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from evaluators.sdk import EvaluatorInfo, entry_point_evaluators, in_default_set, list_builtins
from monitor.text import clip


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluators",
        help="list the available evaluators",
        description="Show the evaluators agent-monitor can run: builtins and those installed through the "
        "'agent_monitor.evaluators' entry-point group.",
    )
    actions = parser.add_subparsers(dest="evaluators_action", metavar="ACTION")
    listing = actions.add_parser(
        "list",
        help="print the catalog: level, kind, ground truth, default set, threshold and params of each evaluator",
        description="Print every evaluator with its level, kind, whether it needs ground truth, whether it is "
        "in the default set (what the daemon runs without an evaluators list; 'needs config' marks a builtin "
        "that cannot score until its params are set), its default threshold and its params. A scored result "
        "passes when score >= threshold.",
    )
    listing.add_argument("--json", action="store_true", help="print the catalog as JSON")
    listing.set_defaults(handler=run)

    def usage(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(handler=usage)


def catalog(err: TextIO | None = None) -> list[tuple[str, EvaluatorInfo]]:
    """(source, info) of every builtin, then of every entry-point evaluator (a failing entry point is reported)."""
    found = [("builtin", info) for info in list_builtins()]
    try:
        found += [("entry_point", ev.info) for ev in entry_point_evaluators()]
    except (ImportError, TypeError) as exc:
        print(f"agent-monitor evaluators: warning: {exc}", file=err or sys.stderr)
    return found


def info_dict(source: str, info: EvaluatorInfo) -> dict[str, Any]:
    """What `--json` prints for one evaluator."""
    return {
        "name": info.name,
        "source": source,
        "level": info.level,
        "kind": info.kind,
        "needs_ground_truth": info.needs_ground_truth,
        "needs_config": info.needs_config,
        "in_default_set": source == "builtin" and in_default_set(info),
        "threshold": info.threshold,
        "description": info.description,
        "aggregations": info.aggregations,
        "params": [p.model_dump() for p in info.params],
    }


def _param_line(param: Any, width: int) -> str:
    bounds = []
    if param.choices is not None:
        bounds.append("one of " + ", ".join(clip(c, 20) for c in param.choices))
    if param.min is not None:
        bounds.append(f">= {param.min:g}")
    if param.max is not None:
        bounds.append(f"<= {param.max:g}")
    extra = f" ({'; '.join(bounds)})" if bounds else ""
    name = clip(param.name, 30).ljust(width)
    return f"      {name} = {clip(param.default, 40)}  {clip(param.description, 100)}{extra}".rstrip()


def _membership(source: str, info: EvaluatorInfo) -> str:
    """`default set` for builtins the daemon runs by default, `needs config` for those that cannot score
    with their defaults, else `-`."""
    if source == "builtin" and in_default_set(info):
        return "default set"
    return "needs config" if info.needs_config else "-"


def render(entries: list[tuple[str, EvaluatorInfo]]) -> str:
    """The catalog as text: one header line per evaluator, its description, then its params."""
    if not entries:
        return "no evaluators registered\n"
    width = max(len(clip(info.name, 40)) for _, info in entries)
    lines = []
    for source, info in entries:
        truth = "ground truth" if info.needs_ground_truth else "no ground truth"
        origin = "" if source == "builtin" else f"  [{source.replace('_', ' ')}]"
        lines.append(
            f"{clip(info.name, 40).ljust(width)}  {info.level:<5}  {clip(info.kind, 14):<9}  {truth:<15}  "
            f"{_membership(source, info):<12}  threshold {info.threshold:g}{origin}"
        )
        if info.description:
            lines.append(f"    {clip(info.description, 110)}")
        if info.params:
            lines.append("    params:")
            names = max(len(clip(p.name, 30)) for p in info.params)
            lines.extend(_param_line(p, names) for p in info.params)
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    entries = catalog(err)
    if args.json:
        json.dump([info_dict(source, info) for source, info in entries], out, indent=2, ensure_ascii=False, default=str)
        out.write("\n")
    else:
        out.write(render(entries))
    return 0
