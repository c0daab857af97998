"""`agent-monitor poll --source NAME --since T [--until T]`: one pull of a configured source over a time range,
evaluated offline and reported as `agent-monitor evaluate` reports it (backfills, investigations). It reads every
trace that started in the range whatever the daemon's checkpoint says, and changes no checkpoint.

Exit status: 0, or 1 when a `min_pass_rate` gate of the spec is missed; 1 when the source fails; 2 for bad
arguments or config.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import TextIO

from pydantic import ValidationError

from evaluators.traces.loader import traces_from_batch
from evaluators.traces.records import DecodedBatch, LogRecord, SpanRecord
from monitor.commands import check_config, daemon_address
from monitor.commands.evaluate_cmd import render_table
from monitor.config import DEFAULT_SOURCE, ConfigError, load_located
from monitor.offline.evaluation import evaluate_offline
from monitor.offline.judges import stderr_progress
from monitor.offline.spec import InputError, selection_and_judges
from monitor.review.api_params import BadRequest, parse_time
from monitor.sources.base import PolledTrace, SourceError, TraceSource
from monitor.sources.checkpoints import MemoryCheckpoints
from monitor.sources.factory import make_source
from monitor.sources.runner import Poller, RunReport

PROG = "agent-monitor poll"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "poll",
        help="pull a configured source once over a time range and evaluate what it returns",
        description="Read the traces a configured source (`sources:` in the config) holds that started in "
        "[--since, --until), evaluate them offline and print the same report as `evaluate`. The daemon's "
        "checkpoints are neither read nor changed. Times: RFC 3339, Unix seconds, or a duration before now "
        "(30m, 1h, 7d). Exit 0, or 1 when a min_pass_rate gate is missed or the source fails; 2 for bad "
        "arguments or config.",
    )
    parser.add_argument("--source", required=True, metavar="NAME", help="the `name` of an entry under sources:")
    parser.add_argument("--since", required=True, metavar="TIME", help="the range's start (inclusive)")
    parser.add_argument("--until", metavar="TIME", help="the range's end (exclusive; default: now)")
    parser.add_argument(
        "--config", help=f"YAML config file (default: ${daemon_address.CONFIG_ENV}, else the embedded default)"
    )
    parser.add_argument(
        "--evaluators", dest="spec", metavar="SPEC", help="YAML evaluator spec (default: every rule-based builtin)"
    )
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    parser.add_argument("--worst", type=int, default=10, metavar="N", help="show the N worst results (default 10)")
    parser.set_defaults(handler=run)


class CollectingSink:
    """Takes every polled trace once, for the offline evaluation after the pull."""

    def __init__(self) -> None:
        self.traces: dict[str, PolledTrace] = {}

    def claim(self, trace_ids: list[str]) -> list[str]:
        return [t for t in trace_ids if t not in self.traces]

    async def evaluate(self, traces: list[PolledTrace], stop: Callable[[], bool] = lambda: False) -> list[PolledTrace]:
        for trace in traces:
            self.traces[trace.trace_id] = trace
        return traces

    async def wait_for_room(self, stop: Callable[[], bool] = lambda: False) -> None:
        return None

    def feed(self, spans: list[SpanRecord], logs: list[LogRecord]) -> None:
        raise SourceError("client", "a span feed has no time range to read")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    path = daemon_address.config_path(args)
    try:
        config, _ = load_located(path, env=None)
    except ConfigError as exc:
        return check_config.report_invalid(path or DEFAULT_SOURCE, exc, err)
    entries = {entry.name: entry for entry in config.sources}
    entry = entries.get(args.source)
    if entry is None:
        known = ", ".join(entries) or "none configured"
        print(f"{PROG}: no source named {args.source!r} under sources: ({known})", file=err)
        return 2
    now = time.time()
    try:
        since = parse_time("--since", args.since, now)
        until = parse_time("--until", args.until, now) if args.until else now
        selection, judges = selection_and_judges(args.spec, config.pricing.overrides())
        source = make_source(entry)
    except (BadRequest, InputError, ValueError, ValidationError) as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    if not isinstance(source, TraceSource):
        print(f"{PROG}: source {entry.name} ({entry.type}) is a span feed: it has no time range to read", file=err)
        return 2
    if until <= since:
        print(f"{PROG}: --until must be after --since", file=err)
        return 2
    sink = CollectingSink()
    poller = Poller(entry, source, MemoryCheckpoints(), sink, max_spans_per_trace=config.assembly.max_spans_per_trace)
    try:
        report = asyncio.run(_pull(poller, since, until))
    except SourceError as exc:
        print(f"{PROG}: {entry.name}: {exc}", file=err)
        return 1
    batch = DecodedBatch()
    for trace in sink.traces.values():
        batch.spans.extend(trace.spans)
        batch.logs.extend(trace.logs)
    traces = traces_from_batch(batch)
    print(f"{PROG}: {entry.name}: {report.listed} traces started in the range, {len(traces)} evaluated", file=err)
    result = evaluate_offline(
        traces,
        selection,
        None,
        worst=args.worst,
        judges=judges,
        progress=stderr_progress(err),
        signature_rules=config.signatures.compiled_rules(),
        prices=config.pricing.overrides(),
    )
    if args.format == "json":
        json.dump(result.to_dict(), out, indent=2, ensure_ascii=False, default=str)
        out.write("\n")
    else:
        out.write(render_table(result))
    return result.exit_code


async def _pull(poller: Poller, since: float, until: float) -> RunReport:
    try:
        return await poller.run_range(since, until)
    finally:
        await poller.source.close()
