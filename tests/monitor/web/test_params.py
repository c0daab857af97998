"""Query parameters of the metrics port (issue 23, defect 7): every value is bounded before it is parsed, parsing
is linear, and a bad number or cursor is a 400 on the API (JSON) and on the page (HTML), never a 500."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.outcomes import ResultRow, TraceOutcome
from monitor.review.of_store import reader_of
from monitor.store.sqlite import ResultStore
from monitor.web.app import build_api_app
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration  # each test starts a process or a server

TRACE = "cd" * 16
MAX_PARAM_CHARS = 256  # monitor.review.api_params.MAX_PARAM_CHARS


def _cursor(key: list[object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


@pytest.fixture
def base(tmp_path: Path) -> Iterator[str]:
    """The metrics port reading a real SQLite store with one failing result, no token (loopback)."""
    store = ResultStore(tmp_path / "r.db")
    failing = ResultRow(None, None, None, "error_free", "trace", 0.0, False, None, "tool failed", None, 0.001)
    store.write([TraceOutcome(TRACE, "checkout", 1.0, True, (), (), "in", "out", 2, 10.0, 0.0, (failing,))])
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, None, reader=reader_of(store))
    try:
        with serve(app) as url:
            yield url
    finally:
        store.close()


LONG_DIGITS = "1" * 7999 + "x"  # 2.5 s of regex backtracking per request before the fix


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (f"since={LONG_DIGITS}", f"since: longer than {MAX_PARAM_CHARS} characters"),
        (f"until={'9' * 8000}", f"until: longer than {MAX_PARAM_CHARS} characters"),
        (f"evaluator={'e' * (MAX_PARAM_CHARS + 1)}", f"evaluator: longer than {MAX_PARAM_CHARS} characters"),
        ("limit=%C2%B2", "limit must be a number from 1 to 500, got '²'"),
        ("limit=1_0", "limit must be a number from 1 to 500, got '1_0'"),
        (f"limit={'9' * 40}", "limit must be a number from 1 to 500"),
        # cursors that decode to numbers the store's 64-bit columns cannot hold, or a time that is not finite
        (f"cursor={_cursor([1.0, 1, 10**30, 0])}", "invalid cursor"),
        (f"cursor={_cursor([1.0, 0, 1, -(10**25)])}", "invalid cursor"),
        (f"cursor={_cursor([1e400, 1, 1, 0])}", "invalid cursor"),
        (f"cursor={'A' * 5000}", "cursor: longer than"),
    ],
)
def test_bad_values_are_400_json_on_the_api(base: str, query: str, message: str) -> None:
    status, headers, body = get(f"{base}/api/v1/results?{query}")
    assert status == 400, body
    assert headers["Content-Type"].startswith("application/json")
    assert message in body["error"], body
    assert len(body["error"]) < 400  # the offending value is not echoed whole


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("limit=%C2%B2", "limit must be a number"),
        (f"limit={'9' * 5000}", "longer than"),
        (f"since={LONG_DIGITS}", "since: longer than"),
        (f"cursor={_cursor([1.0, 1, 10**30, 0])}", "cursor: not one this store issued"),
        (f"cursor={_cursor([float('nan'), 1, 1, 0]).replace('=', '')}", "cursor: not one this store issued"),
    ],
)
def test_bad_values_are_400_pages_on_the_review_page(base: str, query: str, message: str) -> None:
    status, headers, body = get(f"{base}/review?{query}")
    assert status == 400, body
    assert headers["Content-Type"].startswith("text/html")
    assert message in body


def test_a_good_cursor_still_pages(base: str) -> None:
    status, _, body = get(f"{base}/api/v1/results?limit=1&outcome=fail")
    assert status == 200 and [i["trace_id"] for i in body["items"]] == [TRACE]
    key = _cursor([4e9, 1, 2**63 - 1, 0])  # the year 2096 and the largest id the store holds: before it, all
    status, _, body = get(f"{base}/api/v1/results?cursor={urllib.parse.quote(key)}")
    assert status == 200 and [i["trace_id"] for i in body["items"]] == [TRACE]


def test_api_failing_bounds_its_parameters(base: str) -> None:
    assert get(f"{base}/api/failing?limit=%C2%B2")[0] == 400
    assert get(f"{base}/api/failing?evaluator={'e' * 5000}")[0] == 400
    status, _, body = get(f"{base}/api/failing?limit=2")  # followed: /api/v1/results?outcome=fail&limit=2
    assert status == 200 and [i["trace_id"] for i in body["items"]] == [TRACE]


_LINEAR = """
from monitor.config.units import parse_duration
from monitor.review.api_params import BadRequest, parse_time
for text in ("1" * 200_000 + "x", "1h" * 100_000 + "1", "1.5" * 60_000 + "m"):
    for parse in (parse_duration, lambda t: parse_time("since", t[:256], 0.0)):
        try:
            parse(text)
        except (ValueError, BadRequest):
            pass
print("done")
"""


def test_duration_parsing_is_linear_on_a_long_run_of_digits() -> None:
    """Before the fix a duration was read with a regex search from every position: 200,000 digits without a
    unit took about ten minutes (quadratic). Linear, it takes milliseconds; the subprocess bound only keeps the
    test from hanging."""
    done = subprocess.run([sys.executable, "-c", _LINEAR], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "done"
