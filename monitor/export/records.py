"""Evaluation results as OpenTelemetry `gen_ai.evaluation.result` events: one SDK log record per exported result row,
parented to the evaluated span (GenAI semantic conventions), with agent-monitor's own attributes beside them.

Trace context: the trace's id and the row's `span_id` (the evaluated LLM, agent or tool span); a trace-level row
has none and takes the trace's root span. A late result (an LLM judge's) of the trace level has no root span at
hand: its record carries the trace id alone. A session-level result is parented to the session's last turn (its
trace id, no span). The instrumentation scope is `agent-monitor`, which the daemon's own receive side ignores (so a
daemon that exports to itself never loops).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from evaluators.judges.control import judge_sampled_in
from monitor import __version__
from monitor.config.export import Results
from monitor.outcomes import LateResults, ResultRow, SessionOutcome, TraceOutcome

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE_NAME = "agent-monitor"  # the receive side drops records of this scope: keep the two equal
SCOPE = InstrumentationScope(SCOPE_NAME, __version__)
RESOURCE = Resource.create({"service.name": "agent-monitor", "service.version": __version__})
# Skip reasons that mean the evaluation itself failed (its `error.type`), not that it had nothing to measure.
ERROR_REASONS = frozenset({"error", "timeout", "judge_unavailable", "budget_exhausted", "rate_limited"})


class RecordBuilder:
    """The records of result rows, by `results` (failing | all | sampled, the `sample` fraction of the traces)."""

    def __init__(self, results: Results = "failing", sample: float = 1.0) -> None:
        self.results = results
        self.sample = sample

    def wanted(self, trace_id: str, row: ResultRow) -> bool:
        """Whether `row` (of trace `trace_id`) is exported: never an external result (the application sent it as
        an event already: exporting it again would show it twice beside the trace)."""
        if row.external:
            return False
        results = self.results
        if results == "all":
            return True
        if row.skip_reason is not None or row.passed is None:
            return False
        if results == "failing":
            return not row.passed
        return judge_sampled_in(trace_id, self.sample)  # by the trace id alone: the judges' traces at that rate

    def of_trace(self, o: TraceOutcome) -> list[ReadableLogRecord]:
        """An evaluated trace's records (trace-level rows on its root span)."""
        rows = [row for row in o.results if self.wanted(o.trace_id, row)]
        if not rows:
            return []
        session = o.turn[0] if o.turn else None
        contexts: dict[str, Any] = {}  # one per evaluated span: a trace's rows share few
        records = []
        for row in rows:
            span_id = row.span_id or o.root_span_id
            context = contexts.get(span_id)
            if context is None:
                context = contexts[span_id] = _context(o.trace_id, span_id)
            records.append(_record(context, row, o.service, o.variant, session))
        return records

    def of_late(self, o: LateResults) -> list[ReadableLogRecord]:
        """Late results' records (an LLM judge's, after their trace was stored)."""
        wanted = (row for row in o.results if self.wanted(o.trace_id, row))
        return [_record(_context(o.trace_id, row.span_id or ""), row, o.service, o.variant, None) for row in wanted]

    def of_session(self, o: SessionOutcome) -> list[ReadableLogRecord]:
        """An evaluated conversation's records, parented to its last turn's trace."""
        session = o.session
        last = session.turns[-1] if session.turns else None
        trace_id = last.trace_id if last is not None else ""
        service = last.service if last is not None else ""
        wanted = (row for row in o.results if self.wanted(trace_id or session.session_id, row))
        context = _context(trace_id, "")
        return [_record(context, row, service, "", session.session_id) for row in wanted]

    def of_outcomes(self, items: Iterable[Any]) -> list[ReadableLogRecord]:
        """The records of any mix of TraceOutcome, LateResults and SessionOutcome (others are ignored)."""
        records: list[ReadableLogRecord] = []
        for item in items:
            if isinstance(item, TraceOutcome):
                records.extend(self.of_trace(item))
            elif isinstance(item, LateResults):
                records.extend(self.of_late(item))
            elif isinstance(item, SessionOutcome):
                records.extend(self.of_session(item))
        return records


def _context(trace_id: str, span_id: str) -> Any:
    """An OpenTelemetry context whose current span is the evaluated one (None when the ids are not hex)."""
    try:
        trace, span = int(trace_id, 16) if trace_id else 0, int(span_id, 16) if span_id else 0
    except ValueError:
        return None
    if not trace:
        return None
    sampled = TraceFlags(TraceFlags.SAMPLED)
    return set_span_in_context(NonRecordingSpan(SpanContext(trace, span, is_remote=True, trace_flags=sampled)))


def _record(context: Any, row: ResultRow, service: str, variant: str, session: str | None) -> ReadableLogRecord:
    """The record of one row; `context`: the evaluated span's (`_context`)."""
    attributes: dict[str, Any] = {"gen_ai.evaluation.name": row.evaluator, "agent_monitor.level": row.level}
    scored = row.skip_reason is None and row.passed is not None
    if row.score is not None and math.isfinite(row.score):
        attributes["gen_ai.evaluation.score.value"] = float(row.score)
    if scored:
        attributes["gen_ai.evaluation.score.label"] = "pass" if row.passed else "fail"
    if row.explanation:
        attributes["gen_ai.evaluation.explanation"] = row.explanation
    if row.skip_reason is not None:
        attributes["agent_monitor.skip_reason"] = row.skip_reason
        if row.skip_reason in ERROR_REASONS:
            attributes["error.type"] = row.skip_reason
    if row.signature is not None:
        attributes["agent_monitor.signature.id"] = row.signature.id
    if row.agent:
        attributes["gen_ai.agent.name"] = row.agent
    if session:
        attributes["session.id"] = session
    if variant:
        attributes["agent_monitor.variant"] = variant
    if service:
        attributes["agent_monitor.service"] = service
    failed = scored and not row.passed
    now = time.time_ns()
    record = LogRecord(
        timestamp=now,
        observed_timestamp=now,
        context=context,
        severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
        severity_text="WARN" if failed else "INFO",
        body=row.explanation or None,
        attributes=attributes,
        event_name=EVENT_NAME,
    )
    return ReadableLogRecord(record, RESOURCE, SCOPE)
