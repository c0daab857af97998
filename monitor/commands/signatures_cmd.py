"""`agent-monitor signatures [ID]`: failure signatures by impact (as /review shows them), or one signature with
its traces, from the daemon's /api/v1 (`--url`, else the config's metrics port as `review` finds it) or a result
store (`--store`), as tables or `--json`.
Exit 0 on an answer, 1 when the source fails (unreachable, 401, 404, 503), 2 for bad arguments or an invalid config."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from pydantic import TypeAdapter

from monitor.commands.daemon_address import CONFIG_ENV, add_config_argument
from monitor.commands.review_cmd import TOKEN_HELP, URL_HELP, show
from monitor.commands.review_source import ReviewCommandError
from monitor.commands.time_args import check_times
from monitor.review.signature_models import SignatureDetail, SignaturesPage

LIST_FILTERS = ("evaluator", "service", "agent", "variant", "since", "until", "limit")
ONE_FILTERS = ("since", "until", "limit")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "signatures",
        help="failure signatures by impact, or one signature and its traces",
        description="Failing results grouped by failure signature, by impact over the range (results in it, then "
        "growth against the range before), with status, where seen and trend; with an ID, that signature and its "
        "traces (one row per trace with its failing verdicts). Reads the daemon's review API (--url, else the metrics "
        f"port of the config: --config, else ${CONFIG_ENV}, else the embedded default) or a result store (--store). "
        "Times: RFC 3339, Unix seconds, or a duration before now (30m, 1h, 7d; default 24h).",
    )
    parser.add_argument("id", nargs="?", help="one signature (16 hex characters)")
    what = parser.add_argument_group("filters (with an ID: --since, --until and --limit only)")
    what.add_argument("--evaluator", help="only this evaluator")
    what.add_argument("--service", help="only this service")
    what.add_argument("--agent", help="only this agent")
    what.add_argument("--variant", help="only traces of this variant")
    what.add_argument("--since", metavar="TIME", help="failures at or after TIME (default: 24h before --until)")
    what.add_argument("--until", metavar="TIME", help="failures before TIME (default: now)")
    what.add_argument("--limit", metavar="N", help="at most N signatures or traces (1 to 200, default 50)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--url", help=URL_HELP)
    source.add_argument("--store", metavar="FILE|URL", help="read a result store: a SQLite file or a postgresql:// URL")
    add_config_argument(parser)
    parser.add_argument("--token", help=TOKEN_HELP)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the API (default 10)")
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of tables")
    parser.set_defaults(handler=run)


def _request(args: argparse.Namespace) -> tuple[str, list[tuple[str, str]], Any]:
    check_times(args)
    given = [name for name in LIST_FILTERS if getattr(args, name) is not None]
    if args.id is None:
        return "signatures", [(n, str(getattr(args, n))) for n in given], TypeAdapter(SignaturesPage)
    extra = [name for name in given if name not in ONE_FILTERS]
    if extra:
        raise ReviewCommandError(f"a signature ID takes no {', '.join('--' + e for e in extra)}", 2)
    params = [(n, str(getattr(args, n))) for n in given]
    return f"signatures/{args.id}", params, TypeAdapter(SignatureDetail)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    return show(args, lambda: _request(args), "signatures", out, err)
