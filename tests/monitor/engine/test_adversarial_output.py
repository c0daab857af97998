"""Issue 38, item 1: a trace whose LLM output is 400 KB of text built against the e-mail pattern is evaluated by the
daemon (every default evaluator, the store's masking) without stalling its worker, and nothing is dropped.

Before, `find_pii` took about 8 s per 40 KB of such text (quadratic): the worker hung until the pool killed it and
the traces queued behind it were dropped as `worker_stalled`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from evaluators.traces.otlp_proto import decode_traces_protobuf
from monitor.config import MonitorConfig
from monitor.daemon import Daemon
from monitor.review.models import ResultFilter
from tests.bench.synthetic import bench_trace_spans, export_request
from tests.support.completed_traces import completed_from_batch

pytestmark = pytest.mark.integration  # each test starts a process or a server

ADVERSARIAL = "a." * 200_000 + "@!"  # 400 KB
EVALUATED_WITHIN = 30.0  # seconds for 11 traces; generous on a loaded machine (before: about 800 s for the first)


def traces_with_one_adversarial_output(count: int) -> list:
    spans = []
    for n in range(1, count + 1):
        trace = bench_trace_spans(n.to_bytes(16, "big"), time.time_ns() - 10**9, n)
        if n == 1:
            last_llm = [s for s in trace if s.name.startswith("chat ")][-1]
            for attribute in last_llm.attributes:
                if attribute.key == "gen_ai.output.messages":
                    parts = [{"type": "text", "content": ADVERSARIAL}]
                    output = [{"role": "assistant", "parts": parts, "finish_reason": "stop"}]
                    attribute.value.string_value = json.dumps(output)
        spans += trace
    request = export_request(spans).SerializeToString()
    return completed_from_batch(decode_traces_protobuf(request).spans)


def test_a_400_kb_adversarial_output_is_evaluated_and_nothing_is_dropped(tmp_path: Path) -> None:
    config = MonitorConfig.model_validate(
        {
            "receivers": {"grpc": {"host": "127.0.0.1", "port": 0}, "http": {"host": "127.0.0.1", "port": 0}},
            "metrics": {"host": "127.0.0.1", "port": 0},
            "store": {"path": str(tmp_path / "results.db")},
            "evaluation": {"workers": 1},
        }
    )
    d = Daemon(config)
    traces = traces_with_one_adversarial_output(11)
    assert len(traces) == 11

    async def scenario() -> None:
        await d.start()
        try:
            for completed in traces:
                assert d.pool.submit(completed)
            deadline = time.monotonic() + EVALUATED_WITHIN
            while d.evaluated < len(traces):
                assert time.monotonic() < deadline, f"{d.evaluated} of {len(traces)} traces evaluated: a worker stalls"
                await asyncio.sleep(0.02)
            assert d.store is not None
            await asyncio.to_thread(d.store.flush)
            assert d.review is not None
            page = d.review.results(ResultFilter(), 1000).items
            evaluators = {i.evaluator for i in page if i.trace_id == traces[0].trace_id}
            assert "pii_leak" in evaluators, evaluators  # the adversarial trace's results are stored
        finally:
            await d.shutdown(5)

    asyncio.run(scenario())
    registry = d.metrics.registry
    for reason in ("worker_stalled", "worker_crash", "evaluation_error"):
        assert registry.get_sample_value("agent_monitor_traces_dropped_total", {"reason": reason}) == 0
