"""A known mix of agent traces for the spend test, and its sender (the real OTel SDK and OTLP/gRPC exporter).

    python spend_mix.py --endpoint 127.0.0.1:4317 --start UNIX_NANOS

The test imports MIX to compute what the mix must cost; this module, run as a process, sends it. Every span starts
at `--start`, so the test prices each call at the time the daemon prices it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SERVICE = "spend-agent"
SCOPE = "spend-mix"


@dataclass(frozen=True)
class Call:
    """One LLM call: its model, provider and usage as the span reports it (input includes the cache reads and
    writes, output includes the reasoning), and the cost the span reports itself (OpenInference only)."""

    model: str
    provider: str
    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    span_cost: float | None = None


@dataclass(frozen=True)
class Run:
    """An agent's run and its calls: OTel GenAI spans (invoke_agent, chat), or OpenInference spans (AGENT, LLM)."""

    agent: str
    calls: tuple[Call, ...]
    openinference: bool = False


KNOWN_CACHED = Call("gpt-4o", "openai", input=12_000, output=300, cache_read=10_240)  # prompt-cache reads
REASONING = Call("o4-mini", "openai", input=800, output=2_400, reasoning=1_856)
CACHE_WRITE = Call("claude-sonnet-4-5", "anthropic", input=9_000, output=450, cache_read=6_000, cache_write=2_500)
OVERRIDDEN = Call("my-llama-3-70b", "vllm", input=3_000, output=500, cache_read=2_000)  # pricing.models glob
UNKNOWN = Call("acme-internal-llm", "acme", input=700, output=70)  # no price anywhere: unpriced
SPAN_COST = Call("gpt-4o-mini", "openai", input=900, output=100, span_cost=0.0421)  # llm.cost.total wins

OVERRIDES = {"my-llama-*": {"input": 0.0004, "output": 0.0012, "cache_read": 0.0001, "per": "1K"}}

# Each trace: the agent runs under one root span. The third trace has only the unknown model: it has no priced
# call, so it is not in agent_trace_cost_usd. Sent COPIES times each.
MIX: tuple[tuple[Run, ...], ...] = (
    (Run("planner", (KNOWN_CACHED, REASONING, UNKNOWN)), Run("writer", (CACHE_WRITE,))),
    (Run("writer", (OVERRIDDEN, CACHE_WRITE)),),
    (Run("writer", (UNKNOWN, UNKNOWN)),),
    (Run("researcher", (SPAN_COST, SPAN_COST), openinference=True), Run("planner", (REASONING,))),
)
COPIES = 3


def _genai_attributes(call: Call) -> dict[str, str | int]:
    attributes: dict[str, str | int] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": call.provider,
        "gen_ai.request.model": call.model,
        "gen_ai.usage.input_tokens": call.input,
        "gen_ai.usage.output_tokens": call.output,
    }
    details = {
        "gen_ai.usage.cache_read.input_tokens": call.cache_read,
        "gen_ai.usage.cache_creation.input_tokens": call.cache_write,
        "gen_ai.usage.reasoning.output_tokens": call.reasoning,
    }
    return {**attributes, **{key: n for key, n in details.items() if n}}


def _openinference_attributes(call: Call) -> dict[str, str | int | float]:
    attributes: dict[str, str | int | float] = {
        "openinference.span.kind": "LLM",
        "llm.provider": call.provider,
        "llm.model_name": call.model,
        "llm.token_count.prompt": call.input,
        "llm.token_count.completion": call.output,
        "llm.token_count.total": call.input + call.output,
    }
    if call.span_cost is not None:
        attributes["llm.cost.total"] = call.span_cost
    return attributes


def send(endpoint: str, start: int) -> bool:
    """Send COPIES of every trace of MIX, every span starting at `start` (unix ns); True when all were exported."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanKind, set_span_in_context

    from tests.integration.otel_sender import CountingExporter, make_exporter

    exporter = CountingExporter(make_exporter("grpc", endpoint, {}, None))
    provider = TracerProvider(resource=Resource({"service.name": SERVICE}))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=200))
    tracer = provider.get_tracer(SCOPE, "1.0")
    end = start + 1_000_000_000

    def span(name: str, parent, attributes: dict, kind: SpanKind = SpanKind.INTERNAL):
        context = set_span_in_context(parent) if parent is not None else None
        return tracer.start_span(name, context, kind, attributes, start_time=start)

    for _ in range(COPIES):
        for runs in MIX:
            root = span("handle_request", None, {})
            for run in runs:
                if run.openinference:
                    attributes = {"openinference.span.kind": "AGENT", "agent.name": run.agent}
                    agent = span(run.agent, root, attributes)
                else:
                    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent}
                    agent = span(f"invoke_agent {run.agent}", root, attributes)
                for call in run.calls:
                    if run.openinference:
                        llm = span("ChatCompletion", agent, _openinference_attributes(call))
                    else:
                        llm = span(f"chat {call.model}", agent, _genai_attributes(call), SpanKind.CLIENT)
                    llm.end(end_time=end)
                agent.end(end_time=end)
            root.end(end_time=end)
    ok = provider.force_flush(60_000) and exporter.failed_batches == 0
    provider.shutdown()
    return ok


def send_process(grpc_port: int, start: int | None = None) -> None:
    """Run this module in its own process (its own SDK) to send the mix to a daemon's OTLP/gRPC port; every span
    starts at `start` (unix ns, default now)."""
    from tests.integration.conftest import project_env

    command = [sys.executable, __file__, "--endpoint", f"127.0.0.1:{grpc_port}"]
    command += ["--start", str(time.time_ns() if start is None else start)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, **project_env()})
    assert result.returncode == 0, f"sender failed:\n{result.stdout}\n{result.stderr}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True, help="the daemon's OTLP/gRPC receiver, host:port")
    parser.add_argument("--start", type=int, required=True, help="every span's start, unix nanoseconds")
    args = parser.parse_args()
    ok = send(args.endpoint, args.start)
    print(f"spend mix {'SUCCESS' if ok else 'FAILURE'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
