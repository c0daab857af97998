"""An OTLP/HTTP receiver alone, fed to the daemon's Ingestor, for bench_http_ingest.py (run as a process).

    python http_ingest_server.py --impl aiohttp|legacy [--token T] [--inflight-mib N] [--max-seconds S]

`aiohttp` is monitor.receivers.http_receiver.HttpReceiver; `legacy` is the hand-written server kept as
the baseline (legacy_httpserver.py). Both get the same Ingestor and assembler; complete traces are
discarded every 0.25 s so memory stays flat. Prints `listening <port>`, serves until SIGTERM (or
--max-seconds), then prints `stats {json}`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from monitor.auth import BearerAuth
from monitor.config import HttpReceiverConfig, ReceiversConfig
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.metrics import MetricsExporter
from monitor.receivers.http_receiver import HttpReceiver
from monitor.receivers.inflight import InflightBytes
from tests.bench.legacy_httpserver import HTTPServer, OtlpHttpHandler

MAX_BODY = 16 * 1024 * 1024


async def serve(impl: str, token: str | None, inflight_mib: int, max_seconds: float) -> dict:
    metrics = MetricsExporter()
    assembler = TraceAssembler(quiet_period=0.2, max_trace_wait=5.0, max_pending_spans=1_000_000)
    ingestor = Ingestor(assembler)
    auth, telemetry = BearerAuth(token), metrics.intake.receiver("http")
    if impl == "aiohttp":
        # --inflight-mib 0: no budget to speak of (the legacy server has none)
        inflight = InflightBytes(inflight_mib * 1024 * 1024 if inflight_mib else 1 << 50)
        config = ReceiversConfig(http=HttpReceiverConfig(host="127.0.0.1", port=0, max_body_bytes=MAX_BODY))
        server = HttpReceiver(config, ingestor, inflight=inflight, auth=auth, telemetry=telemetry)
    else:
        handler = OtlpHttpHandler(ingestor, MAX_BODY, auth, telemetry)
        server = HTTPServer(handler, "127.0.0.1", 0, max_body_bytes=MAX_BODY)
    await server.start()
    print(f"listening {server.bound_port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.call_later(max_seconds, stop.set)
    discarded = 0
    while not stop.is_set():
        discarded += len(assembler.flush_all())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=0.25)
    await server.shutdown(0.5)
    spans = metrics.intake.spans_received.labels(receiver="http")._value.get()
    return {"spans_received": spans, "traces_discarded": discarded}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", choices=("aiohttp", "legacy"), required=True)
    parser.add_argument("--token", default=None)
    parser.add_argument("--inflight-mib", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    args = parser.parse_args()
    stats = asyncio.run(serve(args.impl, args.token, args.inflight_mib, args.max_seconds))
    print("stats " + json.dumps(stats), flush=True)


if __name__ == "__main__":
    main()
