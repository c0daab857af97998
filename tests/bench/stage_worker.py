"""A worker's side of one batch, stage by stage: what `worker_process.evaluate_batch` and `BatchRun.__call__` do
(TraceEvaluator.evaluate → outcome → rows for each trace, then the batch's store write, tally and result), calling
the same functions in the same order, trace by trace as the worker does (timed stage by stage over a whole batch
instead, the same work cost a quarter less on the bench's host: what each stage touches stays in the CPU's caches).

The evaluators run as `rows` runs them (one `dispatch` over the trace), each unit it yields timed to its evaluator:
an evaluator's figure includes the views it is the first to ask for (those `outcome` reads before the evaluators,
the metrics and the LLM calls, are that stage's). Once the trace's outcome is built they run again on it, every view
built: the evaluator's own cost.
"""

from __future__ import annotations

import functools
import pickle
import time
from multiprocessing.reduction import ForkingPickler
from typing import Any, NamedTuple

from evaluators.sdk import Dispatched, dispatch
from evaluators.traces import build_trace, join_logs
from evaluators.traces.conventions import NORMALIZER_ERRORS
from evaluators.traces.model import Trace
from evaluators.traces.raw_spans import DEEP_ATTRIBUTES, records_of
from monitor.engine.assembler import CompletedTrace
from monitor.engine.batch_run import trace_tally
from monitor.engine.configured import sampled_in
from monitor.engine.spend import call_figures
from monitor.engine.trace_evaluation import TraceEvaluator, _as_timeout, _logs_service, _row, version_of
from monitor.engine.trace_wire import traces_from_wire
from monitor.engine.variants import pair_keys, variant_of
from monitor.engine.worker_process import WRITE_WAIT_SECONDS
from monitor.export.counts import EXPORTS
from monitor.outcomes import ResultRow, TraceOutcome, bounded
from monitor.store import packing
from monitor.store.trace_detail import call_costs, detail_row_of
from tests.bench.stage_timing import Cpu, Parts

UNPICKLE = "worker: unpickle + traces_from_wire"
PACKING = "worker: store: packing (pack_one)"
WRITE = "worker: store: write (the writer path, packing included)"
SQLITE = "worker: store: SQLite write (the writer path less packing)"
RESULT_PICKLE = "worker: pickle the batch result"
EVALUATORS = "worker: evaluators (their views included; each below)"
OUTSIDE_BATCH_RUN = (UNPICKLE, RESULT_PICKLE)  # worker_process.evaluate_batch's, around the BatchRun call


class Head(NamedTuple):
    """What `outcome` reads before the evaluators run."""

    metrics: Any
    llm_calls: list
    service: str
    variant: str
    version: str
    external: list[ResultRow]
    sampled_out: dict[str, ResultRow]


class Staged(NamedTuple):
    outcomes: list[TraceOutcome]
    result: bytes  # the pickled BatchResult, as the worker sends it back


def evaluate_staged(parts: Parts, data: bytes, cpu: Cpu) -> Staged:
    """One batch sent as `data` (the pickled call), evaluated trace by trace, stored and tallied, stage by stage."""
    batch = cpu(UNPICKLE, lambda: traces_from_wire(pickle.loads(data)[1][0]))
    cpu.start()
    outcomes = [_evaluated(parts.evaluator, completed, cpu) for completed in batch]
    return Staged(outcomes, _store_and_tally(parts, outcomes, cpu))


def _evaluated(ev: TraceEvaluator, completed: CompletedTrace, cpu: Cpu) -> TraceOutcome:
    """TraceEvaluator.evaluate and outcome on one trace, a lap per stage; then the evaluators again, every view
    built (untimed as a stage: in `views_built`). The trace is released and dropped after it, as the worker does."""
    lap = cpu.lap
    records = records_of(completed.spans)  # raw spans decoded here, in the worker
    lap("worker: records_of (raw spans decoded)")
    join_logs(records, completed.logs)
    trace = build_trace(records, completed.trace_id)
    lap("worker: join_logs + build_trace")
    head = _head(ev, trace, completed)
    lap("worker: outcome: metrics, LLM calls, service, variant, version, external, sampling")
    cpu.stages.setdefault(EVALUATORS, 0.0)  # its place in the table: each evaluator's figure is in cpu.evaluators
    dispatched = _dispatched(ev, trace, head, cpu, cpu.evaluators)
    signed = _signed(ev, dispatched)
    lap("worker: rows: failure signatures (Signer)")
    rows = _rows(ev, signed, head)
    lap("worker: rows: result_row")
    costs = call_costs(trace, ev.prices)
    lap("worker: call costs (call_costs)")
    fields = _fields(trace, head, costs)
    lap("worker: outcome: call figures, tools, input, output")
    detail = detail_row_of(trace, ev.max_steps, costs=costs) if ev._stores(rows) else None
    lap("worker: detail (detail_row_of)")
    pairs = pair_keys(trace, head.variant, ev.variants)
    lap("worker: pair keys")
    turn = ev._turn(trace)
    lap("worker: turn (session_of, Turn.from_trace, turn_wire)")
    dimensions = ev._dimensions(trace)
    lap("worker: dimensions (dimensions_of)")
    outcome = _outcome(completed, trace, head, rows, fields, detail, pairs, turn, dimensions)
    lap("worker: outcome: TraceOutcome")
    _dispatched(ev, trace, head, cpu, cpu.views_built)
    trace.release()  # as TraceEvaluator.evaluate does: its views are freed now, not by the collector
    return outcome


def _store_and_tally(parts: Parts, outcomes: list[TraceOutcome], cpu: Cpu) -> bytes:
    """BatchRun.__call__ after evaluate_batch: the store write, the tally, the result; the result pickled."""
    run, started = parts.run, time.perf_counter()
    failing_only = parts.config.store.results == "failing"
    clean = set(packing._clean)  # packing remembers clean texts: the write below must find what it would have
    now = time.time()
    cpu(PACKING, lambda: [packing.pack_one(o, now, failing_only) for o in outcomes])
    packing._clean.clear()
    packing._clean.update(clean)
    if parts.worker_store is not None:  # waiting for these rows (the worker waits for the batch before's): timed here
        cpu(WRITE, functools.partial(parts.worker_store.write, wait=WRITE_WAIT_SECONDS), outcomes)
    if run.exporter is not None:
        cpu("worker: export (offer_outcomes)", run.exporter.offer_outcomes, outcomes)
    wire = cpu("worker: tally (trace_tally + wire)", _tally, outcomes)
    ids = [o.trace_id for o in outcomes]
    result = cpu(
        "worker: batch result (store report, new signatures, settlement)",
        run._result,
        wire,
        time.perf_counter() - started,
        ids,
    )
    return cpu(RESULT_PICKLE, lambda: bytes(ForkingPickler.dumps(result)))


def _head(ev: TraceEvaluator, trace: Trace, completed: CompletedTrace) -> Head:
    """TraceEvaluator.outcome's reads before `rows`, and `rows`' sampling."""
    metrics = trace.metrics
    llm_calls = trace.get_llm_calls()
    service = trace.service_name or _logs_service(completed.logs)
    variant = variant_of(trace, ev.variants.attribute)
    version = version_of(trace)
    external = ev.external.trace_rows(trace.spans, completed.logs) if ev.external is not None else []
    if not trace.span_count:
        raise RuntimeError(f"trace {trace.trace_id} has no span: the bench's traces all have seven")
    out = {c.label: ev._sampled_out(c) for c in ev.evaluators if not sampled_in(trace.trace_id, c.label, c.sampling)}
    return Head(metrics, llm_calls, service, variant, version, external, out)


def _dispatched(ev: TraceEvaluator, trace: Trace, head: Head, cpu: Cpu, book: dict[str, float]) -> list[Dispatched]:
    """TraceEvaluator.rows' dispatch of the evaluators sampled in, each unit's lap to its evaluator in `book`."""
    chosen = [c.evaluator for c in ev.evaluators if c.label not in head.sampled_out]
    done = []
    for result in dispatch(trace, chosen, ev.mode):  # type: ignore[arg-type]  # mode is validated by config
        cpu.lap(ev._label_of[id(result.evaluator)], book)
        done.append(result)
    return done


def _signed(ev: TraceEvaluator, dispatched: list[Dispatched]) -> list[tuple[str, Dispatched, Any]]:
    signed = []
    for d in dispatched:
        label = ev._label_of[id(d.evaluator)]
        signed.append((label, d, ev.signer(label, d.level, d.agent_name, d.result)))
    return signed


def _rows(ev: TraceEvaluator, signed: list[tuple[str, Dispatched, Any]], head: Head) -> tuple[ResultRow, ...]:
    """TraceEvaluator.rows' rows from the dispatched results: in configured order, timeouts applied."""
    by_label: dict[str, list[ResultRow]] = {label: [row] for label, row in head.sampled_out.items()}
    spent: dict[str, float] = {}
    for label, done, signature in signed:
        spent[label] = spent.get(label, 0.0) + done.duration_ms
        by_label.setdefault(label, []).append(_row(label, done, signature))
    for label, ms in spent.items():
        if ms > ev.timeout_seconds * 1000.0:
            message = f"ran {ms / 1000:.1f}s, over the {ev.timeout_seconds:g}s limit"
            by_label[label] = [_as_timeout(row, message) for row in by_label[label]]
    return (*(row for c in ev.evaluators for row in by_label.get(c.label, ())), *head.external)


def _fields(trace: Trace, head: Head, costs: dict) -> tuple:
    calls = tuple(call_figures(c, costs[c.span_id]) for c in head.llm_calls)
    tools = tuple((t.name, not t.has_error) for t in trace.get_tool_calls())
    return calls, tools, bounded(trace.input), bounded(trace.output)


def _outcome(
    completed: CompletedTrace,
    trace: Trace,
    head: Head,
    rows: tuple,
    fields: tuple,
    detail: Any,
    pairs: tuple,
    turn: tuple | None,
    dimensions: tuple,
) -> TraceOutcome:
    calls, tools, input_, output = fields
    metrics = head.metrics
    return TraceOutcome(
        trace_id=trace.trace_id,
        service=head.service,
        duration_seconds=metrics.total_duration_ms / 1000.0,
        has_error=bool(metrics.has_errors),
        calls=calls,
        tools=tools,
        input=input_,
        output=output,
        span_count=trace.span_count,
        duration_ms=metrics.total_duration_ms,
        last_seen=completed.last_seen,
        results=rows,
        detail=detail,
        variant=head.variant,
        pair_keys=pairs,
        version=head.version,
        turn=turn,
        dimensions=dimensions,
        root_span_id=root.span_id if (root := trace.root) is not None else "",
    )


def _tally(outcomes: list[TraceOutcome]) -> tuple:
    tally = trace_tally(outcomes)
    tally.normalizer_errors = NORMALIZER_ERRORS.take()
    tally.exports = EXPORTS.take()
    tally.attributes_dropped = DEEP_ATTRIBUTES.take()
    return tally.wire()
