"""The `--since` / `--until` argument type of every command: the API's one time parser (bounded), checked when the
arguments are parsed so that a bad or overflowing value is a usage error (exit status 2) with a message."""

from __future__ import annotations

import argparse
import time

from monitor.review.api_params import BadRequest, parse_time


def time_argument(text: str) -> str:
    """`text` unchanged when it is a time `parse_time` accepts (RFC 3339, Unix seconds or a duration before now);
    argparse.ArgumentTypeError otherwise. The text is kept as given: a command resolves a duration against its own
    "now", and the HTTP commands send it to the daemon as it is."""
    try:
        parse_time("time", text, time.time())
    except BadRequest as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("time: ")) from None
    return text
