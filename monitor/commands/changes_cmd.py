"""`agent-monitor changes`: drift's latest report from the daemon's /api/v1/changes (`--url`, else the config's
metrics port; the token as `review` finds it): the active changes, largest effect first (`--all`: every tested
signal), as a table or `--json`. Drift reports live in the daemon's process: there is no `--store`.
Exit 0 on an answer, 1 when the daemon fails (unreachable, 401, 503: drift off or no report yet), 2 for bad
arguments or an invalid config."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from pydantic import TypeAdapter

from monitor.commands.daemon_address import CONFIG_ENV, add_config_argument, daemon_address
from monitor.commands.review_cmd import TOKEN_HELP, URL_HELP, show
from monitor.commands.review_render import table, when
from monitor.commands.review_source import ApiReviewSource
from monitor.review.change_models import ChangeItem, ChangesPage, ChangeWindow
from monitor.text import clip

KINDS = ("quality", "behaviour")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "changes",
        help="drift: each agent's signals that changed against its own baseline, largest effect first",
        description="The daemon's latest drift report: each (service, agent)'s signals (pass ratios, scores, error "
        "rate, tool use, calls, length, tokens, cost, latency, conversations) in the recent window against the same "
        "hours of the previous days (or the window before), the active changes largest effect first (--all: every "
        "tested signal). Reads the daemon's review API (--url, else the metrics port of the config: --config, else "
        f"${CONFIG_ENV}, else the embedded default). Exit 1 when the daemon fails or has no report, 2 for bad "
        "arguments or an invalid config.",
    )
    parser.add_argument("--all", action="store_true", help="every tested signal, not only the active changes")
    parser.add_argument("--service", help="only this service")
    parser.add_argument("--agent", help="only this agent")
    parser.add_argument("--kind", choices=KINDS, help="only quality or only behaviour signals")
    parser.add_argument("--limit", metavar="N", help="at most N changes (1 to 500, default 50)")
    parser.add_argument("--url", help=URL_HELP)
    add_config_argument(parser)
    parser.add_argument("--token", help=TOKEN_HELP)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the API (default 10)")
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of a table")
    parser.set_defaults(handler=run)


def _params(args: argparse.Namespace) -> list[tuple[str, str]]:
    params = [(name, str(getattr(args, name))) for name in ("service", "agent", "kind", "limit")]
    params = [(name, value) for name, value in params if value != "None"]
    return [*params, ("all", "true")] if args.all else params


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:,.0f}"


def _window(window: ChangeWindow) -> str:
    return f"{_number(window.mean)} n={window.n}"


def _effect(item: ChangeItem) -> str:
    return f"{item.effect * 100:+.1f}pt" if item.scale == "unit" else f"{item.effect * 100:+.0f}%"


def _state(item: ChangeItem) -> str:
    if item.worse:
        return "worse"
    if item.significant:
        return "better" if item.kind == "quality" else f"changed {item.direction or ''}".strip()
    return "-"


def changes_table(page: ChangesPage) -> str:
    """The changes as a table, then each one's summary (every text from traces through `clip`)."""
    head = (
        f"drift as of {when(page.as_of)} (recent window from {when(page.recent_since)}): {page.tested} signals "
        f"tested, {page.matched} {'shown' if page.all else 'changed'}"
        + ("; the last read of the store failed (some figures are older)" if not page.complete else "")
        + "\n"
    )
    if not page.items:
        return head + ("no signal matches\n" if page.all else "no change\n")
    rows = [
        [
            str(rank),
            clip(item.service, 30),
            clip(item.agent or "-", 30),
            clip(f"{item.signal}[{item.subject}]" if item.subject else item.signal, 40),
            item.kind,
            _state(item),
            _window(item.baseline),
            _window(item.recent),
            _effect(item),
            "-" if item.q_value is None else f"{item.q_value:.2g}",
            when(item.since),
            clip(",".join(item.recent_variants), 30) or "-",
        ]
        for rank, item in enumerate(page.items, 1)
    ]
    headers = ("#", "SERVICE", "AGENT", "SIGNAL", "KIND", "STATE", "BASELINE", "RECENT", "EFFECT", "Q", "SINCE")
    text = table((*headers, "NEW VARIANTS"), rows)
    lines = [f"{rank}. {clip(item.summary, 300)}" for rank, item in enumerate(page.items, 1)]
    more = f"({len(page.items)} of {page.matched} shown: raise --limit)\n" if page.matched > len(page.items) else ""
    return head + text + more + "\n" + "\n".join(lines) + "\n"


def _daemon(args: argparse.Namespace) -> ApiReviewSource:
    """The running daemon's API (reports exist only there: no --store)."""
    address = daemon_address(args)
    return ApiReviewSource(address.url, address.token, args.timeout)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    def request() -> tuple[str, list[tuple[str, str]], Any]:
        return "changes", _params(args), TypeAdapter(ChangesPage)

    return show(args, request, "changes", out, err, source=_daemon, render=changes_table)
