"""External evaluators: OpenTelemetry's `gen_ai.evaluation.result` events, which an application (or an evaluation
SDK) emits about its own spans, as result rows of evaluators named by `gen_ai.evaluation.name`.

They come as log records (the logs signal, the convention's way: held with their trace until it completes, or
after it, `late_rows`) or as span events (emitters of the older way). Each becomes one `ResultRow` counted, stored,
grouped into failure signatures and drifted like the daemon's own results; the `source="external"` label of
`agent_eval_results_total` tells them apart (metrics/results.py, from `MetricsTally.external`).

- The evaluated span sets the level: an LLM call's is `llm` (with its model), an agent's is `agent` (with its
  name), any other's (or a span the trace lacks) is `trace`. The span id is kept either way.
- The verdict: the score label when it is one of `pass_labels` / `fail_labels`, else the configured threshold on
  the score (passes at or above it), else none (a `no_verdict` skip); `error.type` set: an `error` skip.
- The score is kept when it lies in [0, 1] (the score histogram's range); any score is in the row's details.
- A name the daemon's own evaluators use is taken as `external.<name>`: one series, one evaluator. At most
  `max_evaluators` names per process (then `__other__`), `max_per_trace` results per trace.
- Records from the daemon's own exporter (scope `agent-monitor`) are never taken back: a daemon exporting to its
  own receiver does not count its results twice.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from evaluators.sdk import EvalResult
from evaluators.traces.records import LogRecord
from evaluators.traces.spans import AgentSpan, LLMSpan, Span
from monitor.config.external import ExternalEvaluationsConfig
from monitor.engine.signing import Signer
from monitor.metrics.tally import finite
from monitor.outcomes import ResultRow, bounded

EVALUATION_EVENT = "gen_ai.evaluation.result"
OWN_SCOPE = "agent-monitor"  # the instrumentation scope of the daemon's own exported results
OTHER = "__other__"
RENAMED_PREFIX = "external."
MAX_NAME_CHARS = 128
NAME = "gen_ai.evaluation.name"
SCORE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"

# (attributes, body, span id) of one event
Event = tuple[Mapping[str, Any], Any, str]


def is_own(record: LogRecord) -> bool:
    """Whether `record` is one of the daemon's own exported results (never taken back in)."""
    return record.scope_name == OWN_SCOPE and record.event_name == EVALUATION_EVENT


class ExternalResults:
    """Result rows of the evaluation events of a trace (`trace_rows`) or of records past their trace (`late_rows`).
    One per process; thread-safe (the names it admits are shared)."""

    def __init__(
        self, config: ExternalEvaluationsConfig, own_names: Collection[str] = (), signer: Signer | None = None
    ) -> None:
        """`own_names`: the `evaluator` labels of the daemon's configured evaluators (an external one that shares a
        name is renamed)."""
        self.config = config
        self.own_names = frozenset(own_names)
        self.signer = signer if signer is not None else Signer()
        self._passing = frozenset(config.pass_labels)
        self._failing = frozenset(config.fail_labels)
        self._names: set[str] = set()
        self._lock = threading.Lock()

    def trace_rows(self, spans: Sequence[Span], logs: Sequence[LogRecord]) -> list[ResultRow]:
        """The rows of the evaluation events on `spans` (span events) and among `logs` (the trace's log records),
        in time order of neither: span events first, then the records as they came."""
        if not self.config.enabled:
            return []
        by_id = {span.span_id: span for span in spans}
        rows: list[ResultRow] = []
        for event in self._events(spans, logs):
            if len(rows) >= self.config.max_per_trace:
                break
            row = self.row(event, by_id.get(event[2]))
            if row is not None:
                rows.append(row)
        return rows

    def late_rows(self, records: Iterable[LogRecord]) -> dict[tuple[str, str], list[ResultRow]]:
        """{(trace id, service): rows} of evaluation records whose trace was evaluated already (trace level: the
        span they name is no longer at hand)."""
        found: dict[tuple[str, str], list[ResultRow]] = {}
        if not self.config.enabled:
            return found
        for record in records:
            if record.event_name != EVALUATION_EVENT or is_own(record):
                continue
            key = (record.trace_id, record.service_name or "unknown")
            rows = found.setdefault(key, [])
            if len(rows) < self.config.max_per_trace:
                row = self.row((record.attributes, record.body, record.span_id), None)
                if row is not None:
                    rows.append(row)
        return {key: rows for key, rows in found.items() if rows}

    @staticmethod
    def _events(spans: Sequence[Span], logs: Sequence[LogRecord]) -> Iterator[Event]:
        for span in spans:
            for event in span.record.events:
                if event.name == EVALUATION_EVENT:
                    yield event.attributes, event.body, span.span_id
        for record in logs:
            if record.event_name == EVALUATION_EVENT and not is_own(record):
                yield record.attributes, record.body, record.span_id

    def row(self, event: Event, span: Span | None) -> ResultRow | None:
        """The row of one event (None: it names no evaluation)."""
        attributes, body, span_id = event
        name = self.name_of(attributes.get(NAME))
        if name is None:
            return None
        level, agent, model = _level_of(span)
        raw_score = _number(attributes.get(SCORE))
        score = raw_score if raw_score is not None and 0.0 <= raw_score <= 1.0 else None
        label = str(attributes.get(LABEL) or "").strip()
        explanation = _text(attributes.get(EXPLANATION)) or _text(body)
        error_type = _text(attributes.get(ERROR_TYPE))
        details = {"source": "external", "score": raw_score, "label": label or None}
        if response := _text(attributes.get(RESPONSE_ID)):
            details["response_id"] = response
        passed, skip = self._verdict(name, label, raw_score, error_type)
        if error_type:
            explanation = f"{error_type}: {explanation}" if explanation else error_type
        signature = None
        if passed is False:
            signed = EvalResult(score=score if score is not None else 0.0, passed=False, explanation=explanation)
            signature = self.signer(name, level, agent, signed)
        return ResultRow(
            span_id=span_id or None,
            agent=agent,
            model=model,
            evaluator=name,
            level=level,
            score=score if skip is None else None,
            passed=passed,
            skip_reason=skip,
            explanation=bounded(explanation) if explanation else None,
            details=bounded(_json({k: v for k, v in details.items() if v is not None})),
            duration_seconds=0.0,
            signature=signature,
            external=True,
        )

    def _verdict(self, name: str, label: str, score: float | None, error_type: str) -> tuple[bool | None, str | None]:
        """(passed, skip reason) of one event."""
        if error_type:
            return None, "error"
        folded = label.casefold()
        if folded in self._passing:
            return True, None
        if folded in self._failing:
            return False, None
        threshold = self.config.thresholds.get(name)
        if threshold is not None and score is not None:
            return score >= threshold, None
        return None, "no_verdict"

    def name_of(self, value: Any) -> str | None:
        """The evaluator label of a `gen_ai.evaluation.name` (None when it names none): renamed when one of the
        daemon's own evaluators has it, `__other__` past `max_evaluators`."""
        name = _text(value)[:MAX_NAME_CHARS]
        if not name:
            return None
        if name in self.own_names:
            name = RENAMED_PREFIX + name
        with self._lock:
            if name in self._names:
                return name
            if len(self._names) >= self.config.max_evaluators:
                return OTHER
            self._names.add(name)
        return name


def _level_of(span: Span | None) -> tuple[str, str | None, str | None]:
    """(level, agent, model) of the evaluated span."""
    if isinstance(span, LLMSpan):
        return "llm", span.agent_name, span.model
    if isinstance(span, AgentSpan):
        return "agent", span.name, None
    return "trace", None, None


def _number(value: Any) -> float | None:
    """A score as a finite float (a bool is no score)."""
    return None if isinstance(value, bool) else finite(value)


def _text(value: Any) -> str:
    if value is None or isinstance(value, bytes | dict | list):
        return ""
    return str(value).strip()


def _json(details: dict[str, Any]) -> str:
    return json.dumps(details, ensure_ascii=False, default=str)


__all__ = ["EVALUATION_EVENT", "OWN_SCOPE", "ExternalResults", "is_own"]
