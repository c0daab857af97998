"""`agent-monitor review`: the on-call view of stored results from a terminal.

Reads the daemon's /api/v1 (`--url`, else the metrics port of the config `run` reads: daemon_address.py; token
from --token, else $AGENT_MONITOR_API_TOKEN, else the config's) or a store file (`--store`, read-only) and prints
the recent results, one trace (`--trace`), a breakdown (`--by`), conversations (`--level session`), one
conversation (`--session`) or the evaluators (`--evaluators`) as tables, or the API's JSON (`--json`).
Results are the failing ones unless `--outcome` says otherwise (`--outcome any`: all of them), as on the page.
Exit 0 on an answer, 1 when the source fails (unreachable, 401, 404, 503), 2 for bad arguments or an invalid config.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from collections.abc import Callable
from typing import Any, TextIO

from pydantic import TypeAdapter, ValidationError

from monitor.commands.daemon_address import CONFIG_ENV, TOKEN_ENV, InvalidConfig, add_config_argument, daemon_address
from monitor.commands.review_render import breakdown_table, evaluators_table, results_table, trace_view
from monitor.commands.review_source import ApiReviewSource, ReviewCommandError, ReviewSource, StoreReviewSource
from monitor.commands.session_render import session_view, sessions_table
from monitor.commands.signatures_render import signature_view, signatures_table
from monitor.commands.time_args import check_times
from monitor.review.models import Breakdown, EvaluatorStatus, ResultsPage, TraceDetail
from monitor.review.session_models import SessionDetail, SessionsPage
from monitor.review.signature_models import SignatureDetail, SignaturesPage

URL_HELP = "the daemon's metrics port (default: the config's, on this host; http://127.0.0.1:9464 by default)"
TOKEN_HELP = f"the API's bearer token (default: ${TOKEN_ENV}, else the config's api.auth or receivers.auth token)"
FILTERS = ("evaluator", "service", "variant", "agent", "model", "outcome", "since", "until", "limit", "sort")
BREAKDOWN_FILTERS = ("evaluator", "variant", "since", "until", "sort")
SIGNATURE_FILTERS = ("evaluator", "service", "variant", "agent", "since", "until", "limit")
SESSION_FILTERS = ("evaluator", "service", "since", "until", "limit")
LEVELS = ("session",)  # --level: the levels listed apart from results (trace, agent and llm results are the list)
DEFAULT_OUTCOME = "fail"  # the failing results, as the review page lists them
EVERY_OUTCOME = ("any", "all", "")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "review",
        help="list recent evaluation results, one trace, a breakdown or the evaluators",
        description="Show what the result store holds, from the daemon's review API (--url) or the store itself "
        "(--store: a SQLite file, or a PostgreSQL URL): recent failing results newest first (filtered; --outcome any "
        "for every outcome), one trace with its "
        "step tree, call costs and results (--trace), verdict counts and spend (USD, LLM calls, unpriced calls) per "
        "service, agent, model, tool or variant (--by; --sort cost: most spend first), or the "
        "configured evaluators with their window pass ratios and alert states (--evaluators, daemon only). Times: "
        "RFC 3339, Unix seconds, or a duration before now (30m, 1h, 7d). Without --url or --store: the daemon at the "
        f"metrics port of the config (--config, else ${CONFIG_ENV}, else the embedded default), with its API token. "
        "Exit 1 when the source fails, 2 for bad arguments or an invalid config.",
    )
    what = parser.add_argument_group(
        "filters (results; --by takes --evaluator, --variant, --since, --until and --sort)"
    )
    what.add_argument("--evaluator", help="only this evaluator (its metric label)")
    what.add_argument("--service", help="only this service")
    what.add_argument("--variant", help="only traces of this variant (the agent version, variants.attribute)")
    what.add_argument("--agent", help="only this agent")
    what.add_argument("--model", help="only this model")
    what.add_argument(
        "--outcome",
        metavar="fail|pass|skip|any",
        help="only this outcome (default fail, as on the review page; any: every result)",
    )
    what.add_argument("--since", metavar="TIME", help="evaluated at or after TIME (e.g. 1h: the last hour)")
    what.add_argument("--until", metavar="TIME", help="evaluated before TIME")
    what.add_argument("--limit", metavar="N", help="at most N results (1 to 500, default 50)")
    what.add_argument(
        "--sort", metavar="failures|cost", help="--by: most failures first (default), or cost: most spend first"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--trace", metavar="ID", help="show one trace: summary, step tree, every result")
    mode.add_argument(
        "--by",
        metavar="service|agent|model|tool|variant|signature",
        help="verdict counts per value, most failures first; signature: failures grouped by signature, by impact",
    )
    mode.add_argument("--evaluators", action="store_true", help="the configured evaluators (needs --url)")
    mode.add_argument(
        "--level",
        metavar="session",
        help="session: conversations with their session-level results and turns' trace ids (failing ones unless "
        "--outcome any; takes --evaluator, --service, --since, --until, --limit)",
    )
    mode.add_argument("--session", metavar="ID", help="show one conversation turn by turn, with its verdicts")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--url", help=URL_HELP)
    source.add_argument(
        "--store", metavar="FILE|URL", help="read a result store instead: a SQLite file, or a postgresql:// URL"
    )
    add_config_argument(parser)
    parser.add_argument("--token", help=TOKEN_HELP)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the API (default 10)")
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of tables")
    parser.set_defaults(handler=run)


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if getattr(args, name) is not None]


def _check_mode(args: argparse.Namespace) -> None:
    if args.trace is not None or args.evaluators or args.session is not None:
        extra = _given(args, FILTERS)
        what = "--trace" if args.trace is not None else "--session" if args.session is not None else "--evaluators"
    elif args.level is not None:
        if args.level not in LEVELS:
            raise ReviewCommandError(f"--level must be one of {', '.join(LEVELS)}, got {args.level!r}", 2)
        if args.outcome is not None and args.outcome not in ("fail", *EVERY_OUTCOME):
            raise ReviewCommandError("--level session takes --outcome fail (the default) or any", 2)
        extra = [name for name in _given(args, FILTERS) if name not in (*SESSION_FILTERS, "outcome")]
        what = f"--level {args.level}"
    elif args.by is not None:
        allowed = SIGNATURE_FILTERS if args.by == "signature" else BREAKDOWN_FILTERS
        extra = [name for name in _given(args, FILTERS) if name not in allowed]
        what = f"--by {args.by}" if args.by == "signature" else "--by"
    elif args.sort is not None:
        raise ReviewCommandError("--sort orders a breakdown: give it with --by", 2)
    else:
        return
    if extra:
        raise ReviewCommandError(f"{what} takes no {', '.join('--' + e for e in extra)}", 2)


def _request(args: argparse.Namespace) -> tuple[str, list[tuple[str, str]], Any]:
    """(endpoint, query parameters, the model its answer is) for the arguments."""
    if args.trace is not None:
        return f"traces/{args.trace}", [], TypeAdapter(TraceDetail)
    if args.evaluators:
        return "evaluators", [], TypeAdapter(list[EvaluatorStatus])
    if args.session is not None:
        return f"sessions/{urllib.parse.quote(args.session, safe='')}", [], TypeAdapter(SessionDetail)
    if args.level is not None:
        params = [(n, str(getattr(args, n))) for n in _given(args, SESSION_FILTERS)]
        if (DEFAULT_OUTCOME if args.outcome is None else args.outcome) == "fail":
            params.append(("failing", "true"))
        return "sessions", params, TypeAdapter(SessionsPage)
    if args.by == "signature":
        return (
            "signatures",
            [(n, str(getattr(args, n))) for n in _given(args, SIGNATURE_FILTERS)],
            TypeAdapter(SignaturesPage),
        )
    if args.by is not None:
        params = [("by", args.by), *((n, str(getattr(args, n))) for n in _given(args, BREAKDOWN_FILTERS))]
        return "breakdown", params, TypeAdapter(Breakdown)
    params = [(n, str(getattr(args, n))) for n in _given(args, FILTERS) if n != "outcome"]
    outcome = DEFAULT_OUTCOME if args.outcome is None else args.outcome
    if outcome not in EVERY_OUTCOME:
        params.append(("outcome", outcome))
    return "results", params, TypeAdapter(ResultsPage)


def source_of(args: argparse.Namespace) -> ReviewSource:
    """--store, else the daemon (--url, else the config's; InvalidConfig for an invalid config)."""
    if args.store is not None:
        return StoreReviewSource(args.store)
    address = daemon_address(args)
    return ApiReviewSource(address.url, address.token, args.timeout)


def _render(answer: Any) -> str:
    if isinstance(answer, ResultsPage):
        return results_table(answer)
    if isinstance(answer, TraceDetail):
        return trace_view(answer)
    if isinstance(answer, Breakdown):
        return breakdown_table(answer)
    if isinstance(answer, SignaturesPage):
        return signatures_table(answer)
    if isinstance(answer, SignatureDetail):
        return signature_view(answer)
    if isinstance(answer, SessionsPage):
        return sessions_table(answer)
    if isinstance(answer, SessionDetail):
        return session_view(answer)
    return evaluators_table(answer)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    def request() -> tuple[str, list[tuple[str, str]], Any]:
        _check_mode(args)
        check_times(args)
        return _request(args)

    return show(args, request, "review", out, err)


def show(
    args: argparse.Namespace,
    request: Callable[[], tuple[str, list[tuple[str, str]], Any]],
    command: str,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    source: Callable[[argparse.Namespace], ReviewSource] | None = None,
    render: Callable[[Any], str] | None = None,
) -> int:
    """Fetch `request()`'s (endpoint, params, model) from the arguments' source (`source`, else `source_of`) and
    print it (`render`, else the review's tables; `--json`: as JSON); the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        endpoint, params, model = request()
        data = (source or source_of)(args).fetch(endpoint, params)
        try:
            answer = model.validate_python(data)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"]
            raise ReviewCommandError(f"unexpected answer (another agent-monitor version?): {problem}") from None
    except ReviewCommandError as exc:
        print(f"agent-monitor {command}: {exc}", file=err)
        return exc.exit_code
    except InvalidConfig as exc:
        return exc.report(err)
    if args.json:
        out.write(json.dumps(data, indent=2, ensure_ascii=True) + "\n")  # ASCII: no raw control characters
    else:
        out.write((render or _render)(answer))
    return 0
