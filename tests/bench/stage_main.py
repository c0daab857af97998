"""The main process's side, stage by stage, through the daemon's own parts (stage_timing.Parts): what the gRPC
receiver's consumer does with a request (AdmissionGate → LoggedConsumer → Ingestor.ingest: decode, sizes and limits,
the assembler's add; the intake log's append), the dispatcher's completion of the due traces, the pool's hand-off
(route, traces_to_wire, the pickle ProcessPoolExecutor makes of the call), and a batch's result coming back
(EvaluationPool._finished: MetricsTally.from_wire, ResultSink.record, the store's report, the intake log's `done`),
then the conversations: the turns written to the store (StoredSessionTracker's sync) and, once complete, claimed,
evaluated by the session-level evaluators and written (its claim transaction). Each bench trace is a conversation
of one turn (its `gen_ai.conversation.id` is made of its trace id), so a session's cost is a trace's.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any

from evaluators.sdk import dispatch_session
from monitor.engine import worker_process
from monitor.engine.assembler import CompletedTrace
from monitor.engine.configured import sampled_in
from monitor.engine.ingest import _batch_bytes
from monitor.engine.pool import route
from monitor.engine.rows_waits import store_side, tell_finished
from monitor.engine.span_size import log_bytes, span_bytes
from monitor.intake.records import Record
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import SessionOutcome
from monitor.receivers.grpc_receiver import RECEIVER
from monitor.sessions.evaluation import session_tally
from monitor.sessions.shared import CLAIM_BATCH, EVALUATION_SECONDS, session_of_claim
from tests.bench.stage_timing import Cpu, Parts

ENCODING, SIGNAL = "protobuf", "traces"
SESSION_EVALUATORS = "main: sessions: session-level evaluators (each below)"


def ingest(parts: Parts, payloads: Sequence[bytes], cpu: Cpu, *, logged: bool = True) -> None:
    """Each request as the receivers' consumer takes it; `logged`: appended to the intake log too."""
    consumer, ingestor = parts.daemon.intake.consumer, parts.daemon.ingestor
    admission, assembler = parts.daemon.admission, parts.daemon.assembler
    for payload in payloads:
        cpu.start()
        room = (admission.refuse(), parts.log.refusal(len(payload)), consumer.store_behind())  # type: ignore[attr-defined]
        closing = assembler.spans_closing
        cpu.lap("main: admission, intake log room")
        if any(room):
            raise RuntimeError(f"the daemon would refuse the request: {room}")
        batch = ingestor.decode(payload, ENCODING, SIGNAL, RECEIVER)
        cpu.lap("main: decode (decode_traces_raw)")
        sizes, log_sizes = _sized(ingestor, batch)
        cpu.lap("main: span sizes, pending limits")
        outcome = ingestor._accept(batch, sizes, log_sizes, RECEIVER)
        admission.admitted(assembler.spans_closing - closing)
        cpu.lap("main: assembler add (Ingestor._accept: TraceAssembler.add), admission")
        if logged:
            _append(parts, payload, outcome.trace_ids)
            cpu.lap("main: intake log append")


def _sized(ingestor: Any, batch: Any) -> tuple[list[int], list[int]]:
    sizes = [span_bytes(span) for span in batch.spans]
    log_sizes = [log_bytes(record) for record in batch.logs]
    if ingestor._over_limit(batch, _batch_bytes(batch, sizes, log_sizes)) is not None:
        raise RuntimeError("the assembler's pending limits would refuse the request")
    return sizes, log_sizes


def _append(parts: Parts, payload: bytes, trace_ids: list[str]) -> None:
    """LoggedConsumer.ingest's part after the ingestor: the request held by the traces it brings."""
    log, assembling = parts.log, parts.daemon.assembler.assembling
    held = [t for t in trace_ids if assembling(t) or log.holds(t)]
    if held and log.append(Record(payload, ENCODING, SIGNAL, RECEIVER, time.time()), held) is not True:
        raise RuntimeError("the intake log did not take the request")


def complete(parts: Parts, cpu: Cpu) -> list[CompletedTrace]:
    """DueTraceDispatcher.dispatch_due's collect_due and take_due, once every trace's quiet period is over."""
    assembler = parts.daemon.assembler
    due_at = time.monotonic() + assembler.quiet_period + 1.0
    return cpu(
        "main: assembler completes the traces (collect_due, take_due)",
        lambda: (assembler.collect_due(due_at), assembler.take_due())[1],
    )


def hand_off(parts: Parts, completed: list[CompletedTrace], cpu: Cpu) -> list[bytes]:
    """The pool's batches (its batch size) as their workers receive them: the pickled call of evaluate_batch."""
    pool = parts.daemon.pool
    size, slots = pool.batch_size, len(pool.slots)
    cpu("main: hand-off: route", lambda: [route(c.trace_id, slots) for c in completed])
    return [
        cpu("main: hand-off: traces_to_wire + pickle", _pickled_call, pool.slots[0].encode, completed[i : i + size])
        for i in range(0, len(completed), size)
    ]


def _pickled_call(encode: Any, batch: list[CompletedTrace]) -> bytes:
    return bytes(ForkingPickler.dumps((worker_process.evaluate_batch, (encode(batch),))))


def record(parts: Parts, result: bytes, trace_ids: list[str], cpu: Cpu) -> None:
    """EvaluationPool._finished and _deliver on a batch's result, then the tracker's write of the turns."""
    pool, tracker = parts.daemon.pool, parts.daemon.sessions
    done = cpu("main: result: unpickle + MetricsTally.from_wire", _tally_of, result)
    tally, batch_result = done
    pool.evaluated += tally.evaluated
    cpu("main: record: ResultSink.record (recorder, metrics, the turns to the tracker)", pool.record, tally)
    cpu(
        "main: record: store report, new signatures",
        store_side,
        batch_result,
        pool.on_store_report,
        pool.on_new_signatures,
    )
    finished = cpu("main: intake log done", _finished, pool, batch_result, trace_ids)
    if not set(trace_ids) <= set(finished):  # (with the rows of earlier batches that settled since: BatchRun's)
        raise RuntimeError("some traces' rows were not written within the worker's wait")
    cpu("main: sessions: turns to the store (sync: arrive)", _sync_turns, tracker)


def _tally_of(result: bytes) -> tuple[MetricsTally, Any]:
    batch_result = pickle.loads(result)
    return MetricsTally.from_wire(batch_result.tally), batch_result


def _finished(pool: Any, result: Any, trace_ids: list[str]) -> list[str]:
    finished = pool.rows.finished(pool.slots[0], result, trace_ids)
    tell_finished(pool.on_finished, finished)
    return finished


def _sync_turns(tracker: Any) -> None:
    """StoredSessionTracker.sync(claim=False): its worker thread's write of the waiting turns, then its record."""
    turns, tracker._turns = tracker._turns, []
    tracker._record_synced(tracker._sync(turns, False))


def complete_sessions(parts: Parts, cpu: Cpu) -> list[Any]:
    """Every open conversation claimed as if its idle time were over (claim, evaluate, write, complete: the
    tracker's claim transaction), its tally applied; the sessions, for `sessions_again`."""
    tracker, store = parts.daemon.sessions, parts.daemon.store
    assert tracker is not None and store is not None
    sessions: list[Any] = []
    while True:
        cpu.start()
        claimed = store.transaction(lambda db: _claim_and_evaluate(tracker, store, db, cpu))
        cpu.lap("main: sessions: COMMIT")
        sessions += claimed
        if len(claimed) < CLAIM_BATCH:
            return sessions


def _claim_and_evaluate(tracker: Any, store: Any, db: Any, cpu: Cpu) -> list[Any]:
    """StoredSessionTracker._claim_and_evaluate (idle: 0), then _record_synced's part for the sessions."""
    tables, config, evaluation = tracker.tables, tracker.config, tracker.evaluation
    claimed = tables.claim(db, 0.0, CLAIM_BATCH, config.max_open_sessions)
    if not claimed.sessions:
        return []
    tables.hold(db, EVALUATION_SECONDS)
    sessions = [session_of_claim(c) for c in claimed.sessions]
    cpu.lap("main: sessions: claim (BEGIN IMMEDIATE, the turns read back)")
    cpu.stages.setdefault(SESSION_EVALUATORS, 0.0)  # its place in the table: each evaluator's is in cpu.evaluators
    results = _session_rules(evaluation, sessions, cpu, cpu.evaluators)
    rows = _session_rows(evaluation, results)
    cpu.lap("main: sessions: rows (signatures, result_row)")
    new = store.write_sessions(db, [SessionOutcome(s, tuple(r)) for s, r in zip(sessions, rows)])
    tables.complete(db, claimed.ids)
    store.news.add(new)
    cpu.lap("main: sessions: write (write_sessions, complete)")
    _applied(tracker, sessions, list(zip(sessions, rows)))
    cpu.lap("main: sessions: tally applied, counted")
    return sessions


def _applied(tracker: Any, sessions: list[Any], evaluated: list[Any]) -> None:
    """StoredSessionTracker._record_synced's part for the sessions evaluated (no judge, no exporter by default)."""
    tracker._count_completed(sessions)
    tally = session_tally(evaluated)
    if tally.results:
        tracker.apply_tally(tally)
    tracker.evaluated += len(sessions)


def _session_rules(evaluation: Any, sessions: list[Any], cpu: Cpu, book: dict[str, float]) -> list[list[Any]]:
    """SessionEvaluation.rows' dispatch of the rules sampled in, session by session, each lap to its rule."""
    label_of, results = evaluation._label_of, []
    for session in sessions:
        chosen = [c.evaluator for c in evaluation.rules if sampled_in(session.session_id, c.label, c.sampling)]
        found = []
        for done in dispatch_session(session, chosen):
            cpu.lap(label_of[id(done.evaluator)], book)
            found.append(done)
        results.append(found)
    return results


def sessions_again(parts: Parts, sessions: list[Any], cpu: Cpu) -> None:
    """The session-level rules again on the same sessions (what they derive from their turns built)."""
    assert parts.daemon.sessions is not None
    cpu.start()
    _session_rules(parts.daemon.sessions.evaluation, sessions, cpu, cpu.views_built)


def _session_rows(evaluation: Any, results: list[list[Any]]) -> list[list[Any]]:
    limit_ms = evaluation.timeout_seconds * 1000.0
    label_of = evaluation._label_of
    return [[evaluation._row(label_of[id(d.evaluator)], d, limit_ms) for d in found] for found in results]
