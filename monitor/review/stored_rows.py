"""Stored rows → the review's models: a result row, a trace's packed passing results, a trace's stored detail."""

from __future__ import annotations

import json
from typing import NamedTuple

from monitor.outcomes import STEP_FIELDS
from monitor.review.models import AgentSpend, ErrorSpan, ModelUsage, ResultItem, Step, TraceDetail, TraceSummary
from monitor.review.sql import PASSING_SOURCE, RESULT_SOURCE, OrderKey

EXCERPT = 300  # characters of the trace's input and output shown with each result
_OUTCOMES = {1: "pass", 0: "fail", None: "skip"}


def _model_usage(
    model: str | None, calls: int, tokens_in: int | None, tokens_out: int | None, usd: float | None = None, n: int = 0
) -> ModelUsage:
    """A stored models entry (its cost and unpriced calls missing in databases from before spend was stored)."""
    name = model if model is not None else "unknown"
    return ModelUsage(
        model=name, calls=calls, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=usd, unpriced_calls=n
    )


def _text_or_none(value: object) -> str | None:
    """A stored string, or None (a database from before it was stored, or a value of another type)."""
    return value if isinstance(value, str) else None


def _excerpt(text: str | None) -> str | None:
    if text is None or len(text) <= EXCERPT:
        return text
    return text[: EXCERPT - 1] + "…"


def result_item(row: tuple) -> tuple[OrderKey, ResultItem]:
    at, ident, trace_id, evaluator, level, passed, score, skip, explanation, details = row[:10]
    service, agent, model, span_id, given, answer, variant, session_id = row[10:]
    outcome = _OUTCOMES.get(passed, "fail")
    entry = [evaluator, level, span_id, agent, model, score, explanation, details]
    skip_reason = (skip or "no_verdict") if outcome == "skip" else None
    trace = _Trace(trace_id, at, service, variant, given, answer)
    return (at, RESULT_SOURCE, ident, 0), _item(trace, entry, outcome, skip_reason, session_id)


def passing_item(row: tuple) -> tuple[OrderKey, ResultItem]:
    at, rowid, index, trace_id, packed, service, given, answer, variant = row
    trace = _Trace(trace_id, at, service, variant, given, answer)
    return (at, PASSING_SOURCE, rowid, -index), _item(trace, json.loads(packed), "pass", None)


class _Trace(NamedTuple):
    """What a result item shows of its trace (`at`: the result's evaluation time)."""

    trace_id: str
    at: float
    service: str | None
    variant: str | None
    given: str | None
    answer: str | None


def _item(
    trace: _Trace, entry: list, outcome: str, skip_reason: str | None, session_id: str | None = None
) -> ResultItem:
    """An item from a result's PASSED_FIELDS-ordered values and its trace's."""
    trace_id, at, service, variant, given, answer = trace
    evaluator, level, span_id, agent, model, score, explanation, details = entry
    return ResultItem(
        trace_id=trace_id,
        evaluated_at=at,
        evaluator=evaluator,
        level=level,
        outcome=outcome,  # type: ignore[arg-type]  # one of Outcome
        score=score,
        skip_reason=skip_reason,
        explanation=explanation,
        details=details,
        service=service,
        variant=variant or "",
        agent=agent,
        model=model,
        span_id=span_id,
        input_excerpt=_excerpt(given),
        output_excerpt=_excerpt(answer),
        session_id=session_id,
    )


def detail_of_rows(trace_id: str, row: tuple | None, rows: list[tuple]) -> TraceDetail:
    if row is None:  # results of a trace that was not stored (late judge results with `results: failing`)
        summary = TraceSummary(trace_id=trace_id, evaluated_at=min(r[0] for r in rows), service=rows[0][10])
        given = answer = variant = None
        passed: list = []
        steps: list[Step] = []
    else:
        at, service, given, answer, span_count, duration_ms, has_errors, packed, agents, tools, detail, variant = row
        unpacked = json.loads(detail) if detail else {}
        cost = unpacked.get("cost")  # [USD, unpriced calls]; missing in databases from before spend was stored
        summary = TraceSummary(
            trace_id=trace_id,
            evaluated_at=at,
            service=service,
            variant=variant or "",
            agents=json.loads(agents) if agents else [],
            input=given,
            input_source=_text_or_none(unpacked.get("input_source")),
            output=answer,
            span_count=span_count or 0,
            duration_ms=duration_ms or 0.0,
            has_errors=bool(has_errors),
            models=[_model_usage(*entry) for entry in unpacked.get("models", ())],
            tools=json.loads(tools) if tools else [],
            errors=[ErrorSpan(span_id=s, name=n, kind=k, error=e) for s, n, k, e in unpacked.get("errors", ())],
            steps_truncated=bool(unpacked.get("truncated")),
            cost_usd=cost[0] if cost else None,
            unpriced_calls=cost[1] if cost else 0,
            agent_spend=[
                AgentSpend(agent=a, calls=c, cost_usd=usd, unpriced_calls=n)
                for a, c, usd, n in unpacked.get("agent_spend", ())
            ],
        )
        steps = [Step(**dict(zip(STEP_FIELDS, values))) for values in unpacked.get("steps", ())]
        trace = _Trace(trace_id, at, service, variant, given, answer)
        passed = [_item(trace, entry, "pass", None) for entry in (json.loads(packed) if packed else ())]
    stored = [result_item((*r[:14], given, answer, variant, r[16]))[1] for r in rows]
    rank = {"fail": 0, "skip": 1, "pass": 2}
    stored.sort(key=lambda item: rank[item.outcome])  # stable: evaluation order within each outcome
    return TraceDetail(summary=summary, steps=steps, results=[*stored, *passed])
