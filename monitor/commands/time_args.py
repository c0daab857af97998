"""The `--since` / `--until` check of the commands that hand them to the daemon (`review`, `signatures`, `explain`
with its `--reference-since` / `--reference-until`): the API's one bounded time parser
(monitor/review/api_params.parse_time, which `calibrate`, `poll` and `dataset export` call themselves), so that a
bad or overflowing value is a one-line usage error (exit status 2) before any request."""

from __future__ import annotations

import argparse
import time

from monitor.commands.review_source import ReviewCommandError
from monitor.review.api_params import BadRequest, parse_time


def check_times(args: argparse.Namespace, names: tuple[str, ...] = ("since", "until")) -> None:
    """ReviewCommandError (exit status 2) unless each given --since / --until (the options `names`, as argparse
    names them: `reference_since` is --reference-since) is a time `parse_time` accepts. The texts are sent as given:
    the daemon resolves a duration against its own "now"."""
    now = time.time()
    for name in names:
        text = getattr(args, name, None)
        if text is not None:
            try:
                parse_time(f"--{name.replace('_', '-')}", text, now)
            except BadRequest as exc:
                raise ReviewCommandError(str(exc), 2) from None
