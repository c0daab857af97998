"""Builders for the result store tests: an agent trace with every step kind, and hand-made outcomes."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, select

from evaluators.traces import Trace
from monitor.outcomes import ResultRow, TraceDetailRow, TraceOutcome
from monitor.store.statements import Statement
from monitor.store.tables import results
from monitor.store.writer import QueuedResultStore
from tests.support.spanfactory import make_span, trace_of

OPENAI_KEY = "sk-proj-" + "Q7x" * 10  # what the pii_leak detectors take for an OpenAI key
GOOGLE_KEY = "AIza" + "SyD4-abcdefghijklmnopqrstuvwxyz0123"  # 35 characters after AIza
CARD = "4111 1111 1111 1111"  # Luhn-valid


def agent_trace(trace_id: str = "ab" * 16, *, secret: bool = False, version: str | None = None) -> Trace:
    """planner agent → retrieval, LLM call (gpt-4o) → search tool, failing calc tool, LLM call (gpt-4o-mini);
    `version`: its resource's service.version."""
    answer = f"Here is the key {OPENAI_KEY}" if secret else "Paris it is."
    resource = {"service.name": "shop", **({"service.version": version} if version else {})}
    agent = make_span(
        "invoke_agent planner",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"},
        trace_id=trace_id,
        resource=resource,
    )

    def child(name: str, attributes: dict, **kwargs: object) -> object:
        return make_span(name, attributes, trace_id=trace_id, parent=agent, resource=resource, **kwargs)

    def chat(model: str, text: str | None, calls: list[str], tokens: tuple[int, int]) -> dict:
        parts = [{"type": "text", "content": text}] if text else []
        parts += [{"type": "tool_call", "id": f"c{n}", "name": n, "arguments": {"q": 1}} for n in calls]
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.agent.name": "planner",
            "gen_ai.usage.input_tokens": tokens[0],
            "gen_ai.usage.output_tokens": tokens[1],
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "where?"}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
        }

    def tool(name: str, arguments: dict, result: object) -> dict:
        recorded = {"gen_ai.tool.call.result": json.dumps(result)} if result is not None else {}
        return {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.agent.name": "planner",
            "gen_ai.tool.call.arguments": json.dumps(arguments),
            **recorded,
        }

    card = {"card": CARD} if secret else {"q": "paris"}
    spans = [
        agent,
        child(
            "retrieval kb",
            {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "where to go?"},
        ),
        child("chat gpt-4o", chat("gpt-4o", None, ["search"], (100, 10))),
        child("execute_tool search", tool("search", card, {"hits": 3})),
        child(
            "execute_tool calc",
            tool("calc", {"x": 1}, None),
            status=2,
            status_message=f"division by zero for {GOOGLE_KEY}" if secret else "division by zero",
        ),
        child("chat gpt-4o-mini", chat("gpt-4o-mini", answer, [], (200, 20))),
    ]
    return trace_of(*spans)  # type: ignore[arg-type]


def row(
    evaluator: str,
    passed: bool | None,
    skip: str | None = None,
    *,
    level: str = "trace",
    agent: str | None = None,
    model: str | None = None,
    span_id: str | None = None,
    explanation: str = "why",
) -> ResultRow:
    score = None if passed is None else float(passed)
    return ResultRow(span_id, agent, model, evaluator, level, score, passed, skip, explanation, '{"k": 1}', 0.001)


def detail(agents: tuple[str, ...] = (), models: tuple[str, ...] = (), tools: tuple[str, ...] = ()) -> TraceDetailRow:
    return TraceDetailRow(agents, tuple((m, 1, 10, 1) for m in models), tools, (), (), False)


def outcome(
    trace_id: str,
    *rows: ResultRow,
    service: str = "svc",
    given: str | None = "in",
    answer: str | None = "out",
    detail: TraceDetailRow | None = None,
    variant: str = "",
) -> TraceOutcome:
    return TraceOutcome(
        trace_id, service, 1.0, False, (), (), given, answer, 3, 1000.0, 0.0, tuple(rows), (), detail, variant
    )


def failing(store: QueuedResultStore, limit: int = 50) -> list[dict[str, Any]]:
    """The store's newest failing results (trace_id, evaluator, explanation), read through the store's own
    connection: its failure is counted in the store's health and raised (StoreUnavailable while not open)."""
    return [dict(zip(("trace_id", "evaluator", "explanation"), r)) for r in store._read(_FAILING, {"limit": limit})]


_FAILING = Statement(
    select(results.c.trace_id, results.c.evaluator, results.c.explanation)
    .where(results.c.passed == 0)
    .order_by(results.c.created_at.desc())
    .limit(bindparam("limit"))
)
