"""`agent-monitor poll`: one pull of a configured source (the fake AMP) over a time range, evaluated offline and
reported as `evaluate` reports it; the exit statuses."""

from __future__ import annotations

import argparse
import io
import json
import time
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from monitor.cli import build_parser
from tests.monitor.sources.test_amp import SCOPE, TOKEN, FakeAmp, Stored, moved
from tests.support.otlp_json import corpus_traces
from tests.support.threaded_server import serve

pytestmark = pytest.mark.integration  # each test starts a process or a server

SCENARIOS = ("oi_openai__tool_agent", "otel_genai__tool_error", "adk_native__tool_agent")


def poll(tmp_path: Path, url: str, *args: str, token: str = TOKEN) -> tuple[int, str, str]:
    config = tmp_path / "monitor.yaml"
    source = {"type": "amp", "name": "amp", "url": url, "token": token, "retries": 0, **SCOPE}
    config.write_text(yaml.safe_dump({"sources": [source]}))
    parsed: argparse.Namespace = build_parser().parse_args(["poll", "--config", str(config), *args])
    out, err = io.StringIO(), io.StringIO()
    code = parsed.handler(parsed, out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_range_is_pulled_evaluated_and_reported_and_errors_have_their_exit_status(tmp_path: Path) -> None:
    now = time.time()
    traces = list(corpus_traces(*SCENARIOS).values())
    fake = FakeAmp([Stored(moved(spans, f"{n + 1:032x}", int((now - 3000 + 600 * n) * 1e9)))
                    for n, spans in enumerate(traces)])  # fmt: skip
    app = web.Application()
    app.router.add_get("/api/v1/orgs/{org}/projects/{project}/agents/{agent}/traces/export", fake.handle)
    with serve(app) as url:
        code, out, err = poll(tmp_path, url, "--source", "amp", "--since", "1h", "--format", "json")
        assert code == 0, err
        report = json.loads(out)
        assert report["traces"] == 3 and "3 traces started in the range, 3 evaluated" in err
        error_free = next(e for e in report["evaluators"] if e["evaluator"] == "error_free")
        assert (error_free["total"], error_free["failed"]) == (3, 1)  # the trace with the tool error

        code, out, err = poll(tmp_path, url, "--source", "amp", "--since", "55m", "--until", "45m")
        assert (
            code == 0 and "monitor mode (no dataset): 1 trace in 0 sessions;" in out
        )  # only the trace at now - 50 min

        code, _, err = poll(tmp_path, url, "--source", "amp", "--since", "1h", token="wrong-token")
        assert code == 1 and "401 Unauthorized" in err and "wrong-token" not in err
        code, _, err = poll(tmp_path, url, "--source", "nope", "--since", "1h")
        assert code == 2 and "no source named 'nope' under sources: (amp)" in err
        code, _, err = poll(tmp_path, url, "--source", "amp", "--since", "yesterday-ish")
        assert code == 2 and "--since" in err
