"""TraceEvaluator: one completed trace → its views → every configured evaluator → a compact TraceOutcome.

Pure CPU work with no shared state, so it runs the same in a worker process or on the in-process thread.
The views are built once per trace and shared by every evaluator. An evaluator that ran past `timeout`
has its results replaced by `timeout` skips (a running evaluator cannot be pre-empted).

Session-level evaluators never run here (the session tracker runs them on whole conversations in the main
process); a trace with a session id gives its outcome a compact turn for it (`turn_wire.py`).

LLM judges do only their CPU half here: the traces they sample (by trace id, the same traces for every
judge) get their prompts built (`evaluators.judges.prepare`), and those go back as `JudgeJob`s for the
judge stage (judge_stage.py), which waits on the network on the event loop, never in a worker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import cast

from evaluators.judges import LLMJudge, prepare
from evaluators.judges.control import judge_sampled_in
from evaluators.pricing import ModelPrice
from evaluators.sdk import Dispatched, Level, dispatch
from evaluators.sessions import Turn, session_of
from evaluators.signatures import FailureSignature
from evaluators.traces import build_trace, join_logs
from evaluators.traces.model import Trace
from evaluators.traces.raw_spans import records_of
from evaluators.traces.records import LogRecord
from monitor.config.models import MonitorConfig
from monitor.config.pipeline import EvaluationConfig
from monitor.config.store import StoreConfig
from monitor.config.variants import VariantsConfig
from monitor.engine.assembler import CompletedTrace
from monitor.engine.configured import ConfiguredEvaluator, sampled_in
from monitor.engine.external_results import ExternalResults
from monitor.engine.signing import Signer
from monitor.engine.spend import call_figures
from monitor.engine.turn_wire import turn_wire
from monitor.engine.variants import MAX_VARIANT_CHARS, pair_keys, variant_of
from monitor.explain.dimensions import DimensionSettings, dimensions_of
from monitor.outcomes import (
    JudgeJob,
    ResultRow,
    TraceFailure,
    TraceOutcome,
    bounded,
    kept_by_store,
    result_row,
)
from monitor.store.trace_detail import call_costs, detail_row_of

log = logging.getLogger(__name__)

Outcome = TraceOutcome | TraceFailure
SERVICE_VERSION = "service.version"


class TraceEvaluator:
    @classmethod
    def from_config(cls, evaluators: Sequence[ConfiguredEvaluator], config: MonitorConfig) -> TraceEvaluator:
        """The evaluator the daemon and its worker processes run: `config`'s timeout, mode, store and variants."""
        store = config.store
        signer = Signer(config.signatures.compiled_rules())
        return cls(
            evaluators,
            timeout_seconds=config.evaluation.timeout,
            mode=config.evaluation.mode,
            store_results=store.results if store.enabled else None,
            max_steps=store.max_steps,
            variants=config.variants,
            signer=signer,
            prices=config.pricing.overrides(),
            session_attributes=config.sessions.attribute if config.sessions.enabled else None,
            dimension_settings=(
                DimensionSettings.from_config(config.explain, config.sessions.attribute)
                if config.explain.enabled and store.enabled
                else None
            ),
            external=ExternalResults(config.external_evaluations, [c.label for c in evaluators], signer),
        )

    def __init__(
        self,
        evaluators: Sequence[ConfiguredEvaluator],
        *,
        timeout_seconds: float = EvaluationConfig.model_fields["timeout"].default,
        mode: str = EvaluationConfig.model_fields["mode"].default,
        store_results: str | None = None,
        max_steps: int = StoreConfig.model_fields["max_steps"].default,
        variants: VariantsConfig | None = None,
        signer: Signer | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
        session_attributes: Sequence[str] | None = None,
        dimension_settings: DimensionSettings | None = None,
        external: ExternalResults | None = None,
    ) -> None:
        """`store_results`: the store's `results` setting ("all", "failing"; None: no store), which decides the
        traces whose review detail (steps, models, tools, errors; trace_detail.py) is built here. `variants`:
        which attribute gives each trace its variant, and which variants are paired for the pairwise judge.
        `signer`: the failure signature of each failing result (`signatures.rules`). `prices`: the `pricing.models`
        overrides of the price table, for what each LLM call cost. `session_attributes`: the `sessions.attribute`
        names, tried before each convention's own for a trace's session id; None: sessions are off (no turns).
        `dimension_settings`: what each trace's dimensions read (`explain`); None: none are kept (explain off, or no
        store)."""
        self.evaluators = [c for c in evaluators if str(getattr(c.evaluator, "level", "trace")) != "session"]
        self.timeout_seconds = timeout_seconds
        self.mode = mode
        self.store_results = store_results
        self.max_steps = max_steps
        self.variants = variants or VariantsConfig()
        self.signer = signer if signer is not None else Signer()
        self.prices = prices or {}  # kept as given: the same mapping as cost_budget's lets a call be priced once
        self.session_attributes = None if session_attributes is None else tuple(session_attributes)
        self.dimension_settings = dimension_settings
        self.external = external  # the application's own evaluations (gen_ai.evaluation.result events); None: off
        self._label_of = {id(c.evaluator): c.label for c in self.evaluators}
        self._is_judge = {c.label: isinstance(c.evaluator, LLMJudge) for c in self.evaluators}
        self._levels = {c.label: str(getattr(c.evaluator, "level", "trace")) for c in self.evaluators}

    def evaluate_batch(self, batch: Iterable[CompletedTrace]) -> list[Outcome]:
        """Every trace of `batch` evaluated; a trace that fails as a whole becomes a TraceFailure."""
        outcomes: list[Outcome] = []
        for completed in batch:
            try:
                outcomes.append(self.evaluate(completed))
            except Exception as exc:
                log.exception("evaluation of trace %s failed", completed.trace_id)
                outcomes.append(TraceFailure(completed.trace_id, f"{type(exc).__name__}: {exc}"[:500]))
        return outcomes

    def evaluate(self, completed: CompletedTrace) -> TraceOutcome:
        spans = records_of(completed.spans)  # raw spans decoded here, in the worker
        join_logs(spans, completed.logs)  # the daemon's own exported results are never among them (assembler.py)
        trace = build_trace(spans, completed.trace_id)
        try:
            return self.outcome(trace, completed.last_seen, completed.logs)
        finally:
            trace.release()  # no view outlives the outcome: freed now, not by the collector

    def outcome(self, trace: Trace, last_seen: float = 0.0, logs: Sequence[LogRecord] = ()) -> TraceOutcome:
        """The TraceOutcome of an already built trace (views, metrics inputs and result rows) and its log records
        (`logs`: for the evaluation events among them). A trace of log records alone (no span came) has only the
        results those events carry, under the records' service."""
        metrics = trace.metrics
        llm_calls = trace.get_llm_calls()
        jobs: list[JudgeJob] = []
        service = trace.service_name or _logs_service(logs)
        variant = variant_of(trace, self.variants.attribute)
        version = version_of(trace)
        external = self.external.trace_rows(trace.spans, logs) if self.external is not None else []
        if trace.span_count or not external:
            rows = (*self.rows(trace, jobs, service, variant, version), *external)
        else:
            rows = tuple(external)
        costs = call_costs(trace, self.prices)  # once: for the metrics and the stored detail
        return TraceOutcome(
            trace_id=trace.trace_id,
            service=service,
            duration_seconds=metrics.total_duration_ms / 1000.0,
            has_error=bool(metrics.has_errors),
            calls=tuple(call_figures(c, costs[c.span_id]) for c in llm_calls),
            tools=tuple((t.name, not t.has_error) for t in trace.get_tool_calls()),
            input=bounded(trace.input),
            output=bounded(trace.output),
            span_count=trace.span_count,
            duration_ms=metrics.total_duration_ms,
            last_seen=last_seen,
            results=rows,
            judge_jobs=tuple(jobs),
            detail=detail_row_of(trace, self.max_steps, costs=costs) if self._stores(rows) else None,
            variant=variant,
            pair_keys=pair_keys(trace, variant, self.variants),
            version=version,
            turn=self._turn(trace),
            dimensions=self._dimensions(trace),
            root_span_id=root.span_id if (root := trace.root) is not None else "",
        )

    def _turn(self, trace: Trace) -> tuple | None:
        """The wire form of the turn `trace` is of its conversation (None: sessions off, or no session id). Its
        calls are priced already (`call_costs`, remembered on the spans under the same `prices`)."""
        if self.session_attributes is None:
            return None
        ref = session_of(trace, self.session_attributes)
        return None if ref is None else turn_wire(ref, Turn.from_trace(trace, self.prices))

    def _dimensions(self, trace: Trace) -> tuple[tuple[str, str], ...]:
        """The trace's dimensions for the store (explain); () when none are kept or they cannot be computed (that
        never fails the trace)."""
        if self.dimension_settings is None:
            return ()
        try:
            return dimensions_of(trace, self.dimension_settings)
        except Exception:
            log.debug("the dimensions of trace %s could not be computed", trace.trace_id, exc_info=True)
            return ()

    def _stores(self, rows: tuple[ResultRow, ...]) -> bool:
        """Whether the store keeps this trace (as ResultStore decides): every one, or those with a failure or a
        skip it stores (not one of UNSTORED_SKIPS)."""
        if self.store_results == "all":
            return True
        return self.store_results == "failing" and any(kept_by_store(r, True) for r in rows)

    def rows(
        self,
        trace: Trace,
        jobs: list[JudgeJob] | None = None,
        service: str = "unknown",
        variant: str = "",
        version: str = "",
    ) -> list[ResultRow]:
        """One row per (evaluator, dispatch unit), in configured evaluator order. A judge's row is here only when
        it is already decided (sampled out, nothing to judge); its requests are appended to `jobs` (without a
        list to take them, judges are not run)."""
        by_label: dict[str, list[ResultRow]] = {}
        chosen = []
        judges = []
        for configured in self.evaluators:
            label = configured.label
            if self._is_judge[label]:
                if jobs is not None and judge_sampled_in(trace.trace_id, configured.sampling):
                    judges.append(configured)
                elif jobs is not None:
                    by_label[label] = [self._sampled_out(configured)]
            elif sampled_in(trace.trace_id, label, configured.sampling):
                chosen.append(configured.evaluator)
            else:
                by_label[label] = [self._sampled_out(configured)]
        if judges and jobs is not None:
            self._prepare_judges(trace, judges, by_label, jobs, service, (variant, version))
        spent: dict[str, float] = {}
        for done in dispatch(trace, chosen, self.mode):  # type: ignore[arg-type]  # mode is validated by config
            label = self._label_of[id(done.evaluator)]
            spent[label] = spent.get(label, 0.0) + done.duration_ms
            by_label.setdefault(label, []).append(self._row(label, done))
        limit_ms = self.timeout_seconds * 1000.0
        for label, ms in spent.items():
            if ms > limit_ms:
                message = f"ran {ms / 1000:.1f}s, over the {self.timeout_seconds:g}s limit"
                by_label[label] = [_as_timeout(row, message) for row in by_label[label]]
        return [row for c in self.evaluators for row in by_label.get(c.label, ())]

    def _prepare_judges(
        self,
        trace: Trace,
        judges: list[ConfiguredEvaluator],
        by_label: dict[str, list[ResultRow]],
        jobs: list[JudgeJob],
        service: str,
        variant: tuple[str, str],
    ) -> None:
        for prepared in prepare(trace, [c.evaluator for c in judges], self.mode):
            label = self._label_of[id(prepared.judge)]
            if prepared.request is None:
                result = prepared.result
                assert result is not None
                level = cast(Level, prepared.level)  # the judge's level: one of LEVELS (BaseEvaluator checks it)
                done = Dispatched(
                    prepared.judge, level, prepared.span_id, prepared.agent_name, prepared.model, result, 0.0
                )
                by_label.setdefault(label, []).append(self._row(label, done))
            else:
                jobs.append(
                    JudgeJob(
                        trace.trace_id,
                        service,
                        label,
                        prepared.level,
                        prepared.span_id,
                        prepared.agent_name,
                        prepared.model,
                        prepared.request,
                        *variant,
                    )
                )

    def _sampled_out(self, configured: ConfiguredEvaluator) -> ResultRow:
        message = f"sampled out at rate {configured.sampling:g}"
        level = self._levels[configured.label]
        return ResultRow(None, None, None, configured.label, level, None, None, "sampled_out", message, None, 0.0)

    def _row(self, label: str, done: Dispatched) -> ResultRow:
        return _row(label, done, self.signer(label, done.level, done.agent_name, done.result))


def _logs_service(logs: Sequence[LogRecord]) -> str:
    """The service of a trace known by its log records alone ("unknown" when they name none)."""
    return next((record.service_name for record in logs if record.service_name), "unknown")


def version_of(trace: Trace) -> str:
    """The `service.version` of the trace's resource ("" when it has none), bounded like a variant."""
    value = trace.resource_attributes.get(SERVICE_VERSION)
    return "" if value is None else str(value).strip()[:MAX_VARIANT_CHARS]


def _row(label: str, done: Dispatched, signature: FailureSignature | None = None) -> ResultRow:
    return result_row(
        done.result,
        span_id=done.span_id,
        agent=done.agent_name,
        model=done.model,
        evaluator=label,
        level=done.level,
        seconds=done.duration_ms / 1000.0,
        signature=signature,
    )


def _as_timeout(row: ResultRow, message: str) -> ResultRow:
    if row.skip_reason is not None:
        return row
    return row._replace(
        score=None, passed=None, skip_reason="timeout", explanation=message, details=None, signature=None
    )
