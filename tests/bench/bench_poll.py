"""Benchmark: a large poll must not slow the receivers down.

Runs of the daemon under the OTLP/gRPC overload of bench_daemon.py (BENCH_POLL_SECONDS each, default 10), in
BENCH_POLL_ROUNDS rounds (default 2, the runs interleaved: this host's speed drifts by 20 % from minute to minute):
receivers alone, then the same plus an `amp` source whose first run backfills BENCH_POLL_TRACES corpus traces
(default 20,000) from a fake AMP trace service on 127.0.0.1 (tests/monitor/sources/test_amp.py), pulled page by page
while the load runs. The figure: traces/s the receivers acknowledged with the poll ÷ without (the summed runs), target
>= 0.9 (the issue's "within 10 %"); also how many polled traces the daemon evaluated meanwhile. Prints, does not assert.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aiohttp import web

from tests.bench.daemon_load import Broken, Run, run_daemon
from tests.monitor.sources import test_amp
from tests.monitor.sources.test_amp import SCOPE, TOKEN, FakeAmp, Stored, moved
from tests.support.otlp_json import corpus_traces
from tests.support.threaded_server import serve

SECONDS = float(os.environ.get("BENCH_POLL_SECONDS", "10"))
ROUNDS = int(os.environ.get("BENCH_POLL_ROUNDS", "2"))  # alone, with, alone, with...: the host drifts
TRACES = int(os.environ.get("BENCH_POLL_TRACES", "20000"))
QUIET = 1.0
TARGET = 0.9


def backlog(count: int) -> list[Stored]:
    """`count` copies of corpus traces started over the last hour, oldest first."""
    now = time.time()
    bases = list(corpus_traces("oi_openai__tool_agent", "otel_genai__tool_error", "strands__tool_agent").values())
    step = 3000 / count
    return [
        Stored(moved(bases[n % len(bases)], f"{n + 1:032x}", int((now - 3300 + n * step) * 1e9))) for n in range(count)
    ]


def cache_the_fake_service() -> None:
    """The fake AMP shares this host's two cores with the daemon: it computes each trace's start and JSON once
    (not on every request), so that what the figure measures is the daemon polling, not the fake serving."""
    starts: dict[int, int] = {}
    documents: dict[int, dict[str, Any]] = {}
    root_start, trace_json = test_amp.root_start, test_amp.amp_trace_json

    def cached_start(spans: list) -> int:
        key = id(spans)
        if key not in starts:
            starts[key] = root_start(spans)
        return starts[key]

    def cached_json(spans: list) -> dict[str, Any]:
        key = id(spans)
        if key not in documents:
            documents[key] = trace_json(spans)
        return documents[key]

    test_amp.root_start = cached_start  # type: ignore[assignment]
    test_amp.amp_trace_json = cached_json  # type: ignore[assignment]


def run(name: str, overrides: dict[str, Any]) -> Run:
    print(f"  running: {name} ({SECONDS:g} s)", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-poll-") as tmp:
        return run_daemon(Path(tmp), overrides, SECONDS, QUIET)


def polled(run: Run) -> float:
    return sum(v for labels, v in run.metrics.get("agent_monitor_poll_traces_total", []) if labels.get("source"))


def main() -> int:
    print(f"receiving during a large poll: {SECONDS:g} s per run, a backlog of {TRACES:,} traces to poll", flush=True)
    cache_the_fake_service()
    stored = backlog(TRACES)
    for trace in stored:
        test_amp.amp_trace_json(trace.spans), trace.start
    alone: list[Run] = []
    both: list[Run] = []
    polled_total = requests = 0
    try:
        for round_ in range(ROUNDS):
            alone.append(run(f"receivers alone, round {round_ + 1}", {}))
            fake = FakeAmp(stored)
            app = web.Application()
            app.router.add_get("/api/v1/orgs/{org}/projects/{project}/agents/{agent}/traces/export", fake.handle)
            with serve(app) as url:
                source = {"type": "amp", "name": "amp", "url": url, "token": TOKEN, "interval": "1s",
                          "backfill": "1h", "settle_delay": "1s", "page_size": 500, **SCOPE}  # fmt: skip
                both.append(run(f"receivers + a large poll, round {round_ + 1}", {"sources": [source]}))
            polled_total += int(polled(both[-1]))
            requests += len(fake.requests)
    except Broken as exc:
        print(f"BROKEN: {exc}")
        return 1
    per_run = [(a.load["traces_per_second"], b.load["traces_per_second"]) for a, b in zip(alone, both, strict=True)]
    without = sum(a for a, _ in per_run) / len(per_run)
    with_poll = sum(b for _, b in per_run) / len(per_run)
    ratio = with_poll / without if without else float("nan")
    rounds = ", ".join(f"{b / a:.2f}" for a, b in per_run)
    print(f"  receivers alone           {without:8,.0f} traces/s acknowledged (mean of {len(per_run)} runs)")
    print(f"  receivers + a large poll  {with_poll:8,.0f} traces/s acknowledged; {polled_total:,} polled traces "
          f"evaluated meanwhile, {requests} page requests; per round {rounds}")  # fmt: skip
    verdict = "OK" if ratio >= TARGET else "MISSED"
    print(f"  with / without the poll   {ratio:.2f}   target >= {TARGET}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
