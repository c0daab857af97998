"""`agent-monitor explain`: what sets a slice of traces apart (issue 42), from the daemon's /api/v1/explain
(`--url`, else the config's metrics port; the token as `review` finds it): an evaluator's failures against its
passing traces, a signature's traces (`--signature`) against the evaluator's other verdicts, or a range against
a reference range (`--reference-since`: a drift's baseline). The headline of the top factor and a table of the
factors (values, shares, lift, coverage, q-value), or `--json`. The explainer lives in the daemon: no `--store`.
Exit 0 on an answer, 1 when the daemon fails (unreachable, 401, 503: explain off or the store unavailable), 2 for
bad arguments (the API's 400 too) or an invalid config."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from pydantic import TypeAdapter

from monitor.commands.daemon_address import CONFIG_ENV, add_config_argument, daemon_address
from monitor.commands.review_cmd import TOKEN_HELP, URL_HELP, show
from monitor.commands.review_render import table, when
from monitor.commands.review_source import ApiReviewSource
from monitor.commands.time_args import check_times
from monitor.explain.model import Explanation
from monitor.explain.wording import (
    TRUNCATED,
    counts_text,
    fdr_text,
    headline,
    lift_text,
    nothing_text,
    q_text,
    share_text,
    values_text,
)
from monitor.text import clip

TEXT_OPTIONS = ("evaluator", "signature", "service", "agent", "variant")
TIME_OPTIONS = ("since", "until", "reference_since", "reference_until")
HEADERS = ("#", "VALUES", "SLICE", "REFERENCE", "LIFT", "COVERAGE", "Q")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="what sets an evaluator's failures (a signature, a drift window) apart: model, version, tool, ...",
        description="What's different about a slice of traces: the dimension values (model, version, tool, tenant, "
        "language, ...) and pairs of values that set it apart from its reference, largest share difference first, "
        "with lift and Benjamini-Hochberg q-values. The slice: --evaluator's failing traces against its passing "
        "ones; --signature's traces against the evaluator's other verdicts; with --reference-since, the range's "
        "traces against the reference range's (a drift's baseline); else the filter's traces against the rest. "
        "Times: RFC 3339, Unix seconds, or a duration before now (30m, 1h, 7d). Reads the daemon's review API "
        f"(--url, else the metrics port of the config: --config, else ${CONFIG_ENV}, else the embedded default). "
        "Exit 1 when the daemon fails, 2 for bad arguments or an invalid config.",
    )
    parser.add_argument("--evaluator", help="the evaluator whose failures are explained (its metric label)")
    parser.add_argument("--signature", metavar="ID", help="a failure signature's traces (16 hex characters)")
    parser.add_argument("--service", help="only traces of this service")
    parser.add_argument("--agent", help="only traces of this agent")
    parser.add_argument("--variant", help="only traces of this variant (the agent version)")
    parser.add_argument("--since", metavar="TIME", help="traces at or after TIME (default: an hour before --until)")
    parser.add_argument("--until", metavar="TIME", help="traces before TIME (default: now)")
    parser.add_argument("--reference-since", metavar="TIME", help="compare with the traces from TIME instead")
    parser.add_argument("--reference-until", metavar="TIME", help="... up to TIME (default: --since)")
    parser.add_argument("--url", help=URL_HELP)
    add_config_argument(parser)
    parser.add_argument("--token", help=TOKEN_HELP)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the API (default 30)")
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of a table")
    parser.set_defaults(handler=run)


def _params(args: argparse.Namespace) -> list[tuple[str, str]]:
    names = (*TEXT_OPTIONS, *TIME_OPTIONS)
    return [(name, str(getattr(args, name))) for name in names if getattr(args, name) is not None]


def explanation_text(found: Explanation) -> str:
    """The headline (or why there is none), the factors as a table, the counts; every text through `clip`."""
    q = found.query
    span = f"{when(q.since)} to {when(q.until)}"
    if q.reference_since is not None:
        span += f" against {when(q.reference_since)} to {when(q.reference_until)}"
    lines = [
        clip(f"what's different, {span}: {counts_text(found)}; {found.tested} tested at {fdr_text(found.fdr)}", 400)
    ]
    if found.truncated:
        lines.append(TRUNCATED)
    if not found.factors:
        return "\n".join([*lines, clip(nothing_text(found), 400)]) + "\n"
    lines.append(clip(headline(found) or "", 400))
    rows = [
        [
            str(rank),
            clip(values_text(factor, "="), 80),
            f"{share_text(factor.slice_share)} ({factor.slice_traces})",
            f"{share_text(factor.reference_share)} ({factor.reference_traces})",
            lift_text(factor.lift),
            share_text(factor.coverage),
            q_text(factor.q_value),
        ]
        for rank, factor in enumerate(found.factors, 1)
    ]
    return "\n".join(lines) + "\n\n" + table(HEADERS, rows)


def _daemon(args: argparse.Namespace) -> ApiReviewSource:
    """The running daemon's API (the explainer lives there: no --store)."""
    address = daemon_address(args)
    return ApiReviewSource(address.url, address.token, args.timeout)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    def request() -> tuple[str, list[tuple[str, str]], Any]:
        check_times(args, TIME_OPTIONS)
        return "explain", _params(args), TypeAdapter(Explanation)

    return show(args, request, "explain", out, err, source=_daemon, render=explanation_text)
