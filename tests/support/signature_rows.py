"""SQL fixtures of failure signatures on either database (tests/support/backends.py): the store's schema set up by
a real store, then `signatures` rows, traces and failing results with a signature inserted behind its back, as
the write side (monitor/store) leaves them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.support.backends import Backend


@dataclass
class Sig:
    """A `signatures` row (the JSON columns as lists)."""

    id: str
    evaluator: str = "tool_success_rate"
    step_name: str = "convert_currency"
    error_type: str = "HTTP 503"
    template: str = "convert_currency failed: HTTP <num> from <url>"
    first_seen: float = 0.0
    last_seen: float = 0.0
    count: int = 1
    services: list[str] = field(default_factory=lambda: ["checkout"])
    variants: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    example_traces: list[str] = field(default_factory=list)
    regressed_at: float | None = None
    level: str = "trace"
    agent: str = ""
    step_kind: str = "tool"


def set_up(backend: Backend) -> None:
    """The latest schema, made by a real store."""
    store = backend.store()
    store.close()


def insert_signature(backend: Backend, sig: Sig) -> None:
    backend.execute(
        "INSERT INTO signatures (id, version, evaluator, level, agent, step_kind, step_name, error_type, template,"
        " example, first_seen, last_seen, count, services, agents, models, variants, versions, example_traces,"
        " regressed_at) VALUES (?, 'v1', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            sig.id,
            sig.evaluator,
            sig.level,
            sig.agent,
            sig.step_kind,
            sig.step_name,
            sig.error_type,
            sig.template,
            sig.template.replace("<num>", "503").replace("<url>", "http://fx.example/rates"),
            sig.first_seen,
            sig.last_seen,
            sig.count,
            json.dumps(sig.services),
            json.dumps(["planner"]),
            json.dumps(["gemini-2.0-flash"]),
            json.dumps(sig.variants),
            json.dumps(sig.versions),
            json.dumps(sig.example_traces),
            sig.regressed_at,
        ),
    )


def insert_trace(backend: Backend, trace_id: str, at: float, service: str = "checkout", variant: str = "") -> None:
    backend.execute(
        "INSERT INTO traces (trace_id, created_at, service, input, output, span_count, duration_ms, has_errors,"
        " variant) VALUES (?, ?, ?, 'convert 100 EUR', 'sorry', 3, 12.5, 1, ?)",
        (trace_id, at, service, variant),
    )


def insert_failure(
    backend: Backend,
    trace_id: str,
    at: float,
    signature: str | None,
    evaluator: str = "tool_success_rate",
    explanation: str = "convert_currency failed: HTTP 503",
    service: str = "checkout",
    agent: str | None = None,
) -> None:
    backend.execute(
        "INSERT INTO results (created_at, trace_id, span_id, service, agent, model, evaluator, level, score, passed,"
        " skip_reason, explanation, details, signature) VALUES (?, ?, NULL, ?, ?, NULL, ?, 'trace', 0.0, 0, NULL,"
        " ?, NULL, ?)",
        (at, trace_id, service, agent, evaluator, explanation, signature),
    )


def trace_id(n: int) -> str:
    return f"{n:032x}"


def failing_traces(
    backend: Backend,
    sig: Sig,
    times: Sequence[float],
    variant: str = "",
    start: int = 1,
    also: Sequence[str] = ("error_free",),
) -> list[str]:
    """One stored trace per time, each with a failing result of `sig` and failing results of the evaluators
    `also` (without a signature); the trace ids made."""
    made = []
    for offset, at in enumerate(times):
        tid = trace_id(start + offset)
        insert_trace(backend, tid, at, sig.services[0] if sig.services else "checkout", variant)
        insert_failure(backend, tid, at, sig.id, sig.evaluator, service=sig.services[0] if sig.services else "checkout")
        for evaluator in also:
            insert_failure(backend, tid, at, None, evaluator, explanation=f"{evaluator}: the trace has an error")
        made.append(tid)
    return made
