"""`agent-monitor calibrate --evaluator X`: for a scored evaluator, the agreement with reviewers, and the precision
and recall of its failures, at each candidate threshold over its reviews in force, and the threshold that matches
the reviewers best (monitor/review/calibration.py), as a table or `--json`.

The configured threshold comes from the config, found as `run` finds it (--config, else $AGENT_MONITOR_CONFIG,
else the embedded default); the reviews from the result store (--store, else the config's `store.url` or
`store.path`). Exit 0 with the table (with or without a suggestion), 1 when the store cannot be read, 2 for bad
arguments, an invalid config, or an evaluator that is not configured or not scored.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Protocol, TextIO, cast

from monitor.config import DEFAULT_SOURCE, ConfigError, load_located
from monitor.engine.evaluator_setup import build_evaluators
from monitor.review.api_params import BadRequest, parse_time
from monitor.review.calibration import MIN_REVIEWS, Calibration, calibrate
from monitor.review.open_reader import StoreUnreadable, open_store_reader
from monitor.store.reviews import StoredReview

from . import check_config, daemon_address

DEFAULT_SINCE = "30d"


class _Reviews(Protocol):
    def reviews_in_force(
        self, evaluator: str | None = None, since: float | None = None, limit: int = 100_000
    ) -> list[StoredReview]: ...

    def close(self) -> None: ...


class UsageError(Exception):
    """Bad arguments or config for calibrate (exit 2)."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="the threshold of a scored evaluator that matches reviewers best",
        description="For a scored evaluator, over its reviews in force: at each candidate threshold (the distinct "
        "reviewed scores and the configured one), the agreement with reviewers, the precision and recall of its "
        "failures and the counts; then the threshold of the highest agreement (ties go to the configured one), "
        "with how many reviews back it, refused below --min-reviews. A review's truth: its corrected score by the "
        "configured threshold when given, else its agreement (agree with a failure or disagree with a pass: it "
        "should fail). The configured threshold: --config, else $AGENT_MONITOR_CONFIG, else the embedded default; "
        "the reviews: --store, else the config's store. Exit 0 with the table, 1 when the store cannot be read, "
        "2 for bad arguments or an evaluator that is not configured with a threshold.",
    )
    parser.add_argument("--evaluator", required=True, help="the evaluator (its `evaluator` label)")
    parser.add_argument(
        "--since",
        metavar="TIME",
        default=DEFAULT_SINCE,
        help="reviews made at or after TIME: RFC 3339, Unix seconds or a duration before now "
        f"(default {DEFAULT_SINCE})",
    )
    parser.add_argument("--store", metavar="FILE|URL", help="the result store (default: the config's store)")
    parser.add_argument(
        "--config", help=f"YAML config file (default: ${daemon_address.CONFIG_ENV}, else the embedded default)"
    )
    parser.add_argument(
        "--min-reviews",
        type=int,
        default=MIN_REVIEWS,
        metavar="N",
        help=f"suggest no threshold on fewer scored reviews (default {MIN_REVIEWS})",
    )
    parser.add_argument("--json", action="store_true", help="print the calibration as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    path = daemon_address.config_path(args)
    try:
        config, locator = load_located(path, env=None)
        built, problems = build_evaluators(config.evaluator_entries(), config.pricing.overrides())
        if problems:
            raise locator.error(problems)
    except ConfigError as exc:
        return check_config.report_invalid(path or DEFAULT_SOURCE, exc, err)
    try:
        threshold = configured_threshold(args.evaluator, {e.label: e.evaluator for e in built})
        if args.min_reviews < 1:
            raise UsageError("--min-reviews must be at least 1")
        since = parse_time("--since", args.since, time.time())
    except (UsageError, BadRequest) as exc:
        print(f"agent-monitor calibrate: {exc}", file=err)
        return 2
    location = daemon_address.store_location(args, config)
    try:
        reader = cast(_Reviews, open_store_reader(location))
        try:
            reviews = reader.reviews_in_force(args.evaluator, since)
        finally:
            reader.close()
    except StoreUnreadable as exc:
        print(f"agent-monitor calibrate: {exc}", file=err)
        return 1
    except Exception as exc:
        print(f"agent-monitor calibrate: reading the reviews failed: {type(exc).__name__}: {exc}", file=err)
        return 1
    result = calibrate(args.evaluator, reviews, threshold, since, args.min_reviews)
    out.write(result.model_dump_json(indent=2) + "\n" if args.json else render(result))
    return 0


def configured_threshold(name: str, evaluators: dict[str, object]) -> float:
    """The threshold of the configured evaluator labelled `name`; UsageError when none, or it has no threshold."""
    if name not in evaluators:
        known = ", ".join(sorted(evaluators)) or "none"
        raise UsageError(f"no configured evaluator {name!r} (configured: {known})")
    threshold = getattr(evaluators[name], "threshold", None)
    if threshold is None:
        raise UsageError(f"{name} is not a scored evaluator: it has no threshold to calibrate")
    return float(threshold)


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


HEADINGS = ("threshold", "agreement", "precision", "recall", "fails", "tp", "fp", "fn", "tn")


def render(result: Calibration) -> str:
    """The table, the threshold marked `*` configured and `<` suggested, and the note."""
    since = "" if result.since is None else f" since {time.strftime('%Y-%m-%d %H:%M', time.gmtime(result.since))} UTC"
    left_out = [f"{n} {what}" for n, what in ((result.skips, "skips"), (result.unscored, "unscored")) if n]
    lines = [
        f"{result.evaluator}: {result.reviews} scored reviews{since}, configured threshold "
        f"{result.configured_threshold:g}" + (f" ({', '.join(left_out)} left out)" if left_out else ""),
    ]
    if result.rows and result.reviews:
        table = [list(HEADINGS)]
        for r in result.rows:
            mark = ("*" if r.configured else "") + ("<" if result.suggested == r else "")
            table.append(
                [f"{r.threshold:g}{mark}", _ratio(r.agreement), _ratio(r.precision), _ratio(r.recall)]
                + [str(n) for n in (r.fails, r.tp, r.fp, r.fn, r.tn)]
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(HEADINGS))]
        lines += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in table]
        legend = "* configured" + ("  < suggested" if result.suggested is not None else "")
        lines.append(f"{legend}  (fails: score below the threshold; tp/fp/fn/tn against reviewers)")
    lines.append(result.note)
    return "\n".join(lines) + "\n"
