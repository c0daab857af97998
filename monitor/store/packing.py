"""Evaluated traces → the rows the result store inserts: masked, cut to size, packed as JSON.

Every text a trace brings (input, output, each stored result's explanation and details, each step's name, error
and text, each error span's name and error) is masked in one `redact_texts` scan per trace (the `pii_leak`
detectors: keys, tokens, cards, emails, ...), then cut to its limit (outcomes.MAX_TEXT, trace_detail.STEP_TEXT and
NAME). Short texts found clean are remembered (`mask`): rule explanations and details repeat from trace to
trace, and are not scanned again.

One `traces` row per trace: its passing results (`results: all`) packed as a JSON array of `PASSED_FIELDS`, its
agents, models and tools as JSON arrays of names, the rest of its review detail as one JSON object
(`DETAIL_KEYS`), its variant as it is (bounded where it is read, engine/variants.py). One `results` row per
failing result and per skip (not sampled_out nor no_data: UNSTORED_SKIPS), a failing result's with its
signature's id, and a `Sighting` of each signature for the `signatures` table (signatures.py).

One `sessions` row per evaluated conversation (`pack_session`): its turns as JSON arrays of
schema.SESSION_TURN_FIELDS (the user's message, the answer and the errors masked and cut like a trace's texts),
and a `results` row per stored session-level result (level "session", the last turn's trace id, `session_id`);
its completion (id, `completed_at`), whose earlier completions' rows the writer forgets first.

Waiting judgements (`PendingWrite`, rows.PendingRow): one `pending_judgements` row each, its payload as JSON with
its masked texts masked (whole: a judge prompt is sent again as it is kept); a LateResults' `resolved` ids and a
PendingWrite's go in the same transaction as the results that settle them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from evaluators.redaction import redact_texts
from monitor.json_text import compact_json
from monitor.outcomes import (
    MAX_TEXT,
    LateResults,
    ResultRow,
    SessionOutcome,
    TraceDetailRow,
    TraceOutcome,
    kept_by_store,
)
from monitor.store.dimension_codes import MAX_VALUE_CHARS, UNMASKED
from monitor.store.rows import PendingWrite
from monitor.store.signal_writes import signal_rows, verdict_lists
from monitor.store.signatures import Sighting
from monitor.store.storable import storable, storable_json, storable_values
from monitor.store.trace_detail import NAME, STEP_TEXT

Written = TraceOutcome | LateResults | SessionOutcome | PendingWrite

PASSED_FIELDS = ("evaluator", "level", "span_id", "agent", "model", "score", "explanation", "details")
# models: [model, calls, input, output tokens, cost USD, unpriced calls]; cost: [the trace's USD, unpriced calls];
# agent_spend: [agent, calls, cost USD, unpriced calls] (a cost null when nothing was priced)
# input_source: the rule that chose the trace's input (Trace.input_source), null when it has none
DETAIL_KEYS = ("models", "errors", "steps", "truncated", "cost", "agent_spend", "input_source")
CLEAN_TEXT = 300  # the longest text remembered as clean
CLEAN_TEXTS = 20_000  # texts remembered (then forgotten all at once)
_clean: set[str] = set()
SCAN_MARGIN = 1_000  # scanned past a text's limit: longer than any e-mail address, key header or token prefix


def mask(texts: list[str | None], limits: list[int]) -> list[str | None]:
    """`redact_texts(texts)`, each cut to its limit; the short texts already found clean (a set per process)
    are not scanned again. Each text is cut before the scan too (to its limit and `SCAN_MARGIN`, so that an item
    across the limit is still found and masked): what a scan costs is bounded by what is kept."""
    cut = [
        t if t is None or len(t) <= n + SCAN_MARGIN else t[: n + SCAN_MARGIN]
        for t, n in zip(texts, limits, strict=True)
    ]
    todo = [i for i, text in enumerate(cut) if text and text not in _clean]
    masked = list(cut)
    if todo:
        for i, done in zip(todo, redact_texts([cut[i] for i in todo]), strict=True):
            masked[i] = done
            if done is not None and done == cut[i] and len(done) <= CLEAN_TEXT:
                if len(_clean) >= CLEAN_TEXTS:
                    _clean.clear()
                _clean.add(done)
    return [t if t is None or len(t) <= n else t[: n - 1] + "…" for t, n in zip(masked, limits, strict=True)]


class Packed(NamedTuple):
    traces: list[tuple]  # schema.TRACE_COLUMNS
    results: list[tuple]  # created_at, trace_id, service, span_id, agent, model, evaluator, level, score, passed,
    # skip_reason, explanation, details, signature, session_id
    appended: list[tuple[str, str]]  # (a late passing result packed, its trace id)
    sightings: list[Sighting]  # the failing results with a signature (signatures.py)
    sessions: list[tuple]  # schema.SESSION_COLUMNS
    completions: list[tuple[str, float]]  # (session_id, completed_at) of each session written: earlier ones go
    kept: int = 0  # the results these rows hold (what is lost when they cannot be written)
    pending: tuple[tuple, ...] = ()  # pending_judgements rows (id, kind, created_at, owner, payload) to keep
    resolved: tuple[str, ...] = ()  # pending_judgements ids to forget (settled by the results written with them)
    signals: tuple[tuple, ...] = ()  # trace_signals rows (signal_writes.SIGNAL_ROW), one per evaluated trace
    tools: tuple[tuple, ...] = ()  # trace_tools rows (signal_writes.TOOL_ROW)
    verdicts: tuple[tuple, ...] = ()  # late verdicts for trace_signals (signal_writes.APPEND_VERDICTS)


def pack(outcomes: Sequence[Written], now: float, failing_only: bool) -> Packed:
    """The rows of `outcomes`, in one Packed."""
    return merged([pack_one(o, now, failing_only) for o in outcomes])


def merged(parts: Sequence[Packed]) -> Packed:
    """Several outcomes' rows as one Packed (one transaction)."""
    if len(parts) == 1:
        return parts[0]
    packed = Packed([], [], [], [], [], [], sum(p.kept for p in parts))
    for part in parts:
        packed.traces.extend(part.traces)
        packed.results.extend(part.results)
        packed.appended.extend(part.appended)
        packed.sightings.extend(part.sightings)
        packed.sessions.extend(part.sessions)
        packed.completions.extend(part.completions)
    pending = tuple(row for part in parts for row in part.pending)
    resolved = tuple(key for part in parts for key in part.resolved)
    signals = tuple(row for part in parts for row in part.signals)
    tools = tuple(row for part in parts for row in part.tools)
    verdicts = tuple(row for part in parts for row in part.verdicts)
    return packed._replace(pending=pending, resolved=resolved, signals=signals, tools=tools, verdicts=verdicts)


def pack_one(o: Written, now: float, failing_only: bool) -> Packed:
    """One evaluated trace's rows (or one trace's late results, or one evaluated session's rows), every text in
    them `storable`."""
    if isinstance(o, SessionOutcome):
        packed = pack_session(o, now, failing_only)
        return packed._replace(resolved=o.resolved) if o.resolved else packed
    if isinstance(o, PendingWrite):
        return pack_pending(o)
    stored: list[ResultRow] = []
    passing: list[ResultRow] = []
    for r in o.results:
        if kept_by_store(r, failing_only):  # the others are counted in the metrics, not stored
            (passing if r.passed else stored).append(r)
    packed = Packed([], [], [], [], [], [], len(stored) + len(passing))
    if isinstance(o, LateResults):
        packed = packed._replace(resolved=o.resolved)
        texts = _result_texts(stored + passing)
        masked = iter(mask(texts, [MAX_TEXT] * len(texts)))
        packed.results.extend(_result_row(now, o.trace_id, o.service, r, masked) for r in stored)
        trace_id = storable(o.trace_id)
        packed.appended.extend((_json(_passed_entry(r, masked)), trace_id) for r in passing)
        failed, passed = verdict_lists(o.results)
        if failed or passed:
            packed = packed._replace(verdicts=((failed, passed, trace_id),))
    else:  # its drift rows whether its trace row is kept or not (`results: failing`): signal_writes.py
        if stored or not failing_only:
            _pack_trace(o, stored, passing, now, packed)
        trace_id, service, variant = storable_values((o.trace_id, o.service, o.variant))
        if o.dimensions:
            o = o._replace(dimensions=_masked_dimensions(o.dimensions))
        row, tools = signal_rows(o, now, trace_id, service, variant)
        packed = packed._replace(signals=(row,), tools=tuple(tools))
    _sightings(o, stored, now, packed.sightings)
    return packed


def _masked_dimensions(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """`pairs` with the values that may carry personal data masked like every stored text (a user id may be an
    e-mail address: every dimension but `dimension_codes.UNMASKED`), before their codes are made."""
    todo = [i for i, (d, _) in enumerate(pairs) if d not in UNMASKED]
    if not todo:
        return pairs
    done = mask([pairs[i][1] for i in todo], [MAX_VALUE_CHARS] * len(todo))
    out = list(pairs)
    for i, value in zip(todo, done, strict=True):
        out[i] = (pairs[i][0], value or "")
    return tuple(out)


def _sightings(o: TraceOutcome | LateResults, stored: list[ResultRow], now: float, into: list[Sighting]) -> None:
    """A Sighting per stored failing result with a signature."""
    signed = [r for r in stored if r.signature is not None and r.passed is False]
    if not signed:
        return
    trace_id, service, variant, version = storable_values((o.trace_id, o.service, o.variant, o.version))
    trace_agents, trace_models = _trace_agents_and_models(o)
    for r in signed:
        agent, model = storable_values((r.agent, r.model))
        assert r.signature is not None
        # a trace-level (or unattributed) result was seen in every agent and model of its trace
        agents = (agent,) if agent else trace_agents
        models = (model,) if model else trace_models
        into.append(Sighting(r.signature, now, trace_id, service, agents, models, variant, version))


def _trace_agents_and_models(o: TraceOutcome | LateResults) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The agents and models of `o`'s trace, in order of appearance (none for late judge results)."""
    if not isinstance(o, TraceOutcome):
        return (), ()
    agents = o.detail.agents if o.detail is not None else ()
    models = dict.fromkeys(call.model for call in o.calls if call.model)
    found = storable_values((*agents, *models))
    return tuple(a for a in found[: len(agents)] if a), tuple(m for m in found[len(agents) :] if m)


def pack_pending(o: PendingWrite) -> Packed:
    """The `pending_judgements` rows of waiting judgements (their masked texts masked in one scan), and the ids of
    those settled."""
    texts = [text for row in o.added for key in row.masked for text in _texts(row.payload.get(key))]
    masked = iter(redact_texts(texts) if texts else ())
    rows = []
    for row in o.added:
        payload = dict(row.payload)
        for key in row.masked:
            value = payload.get(key)
            payload[key] = [next(masked) for _ in value] if isinstance(value, list) else next(masked)
        rows.append((storable(row.id), row.kind, row.created_at, storable(row.owner), _json(payload)))
    return Packed([], [], [], [], [], [], 0, tuple(rows), tuple(storable(key) for key in o.resolved))


def _texts(value: str | list[str | None] | None) -> list[str | None]:
    """A masked payload value's texts: a text, or a list of texts."""
    return value if isinstance(value, list) else [value]


def kept_results(o: Written, failing_only: bool) -> int:
    """How many of `o`'s results the store keeps (`pack_one(o).kept`, without packing)."""
    if isinstance(o, PendingWrite):
        return 0
    return sum(1 for r in o.results if kept_by_store(r, failing_only))


def _json(value: object) -> str:
    return storable_json(compact_json(value))


def _pack_trace(o: TraceOutcome, stored: list[ResultRow], passing: list[ResultRow], now: float, into: Packed) -> None:
    detail = o.detail
    texts = [o.input, o.output, *_result_texts(stored + passing)]
    limits = [MAX_TEXT] * len(texts)
    if detail is not None:
        for step in detail.steps:
            texts += (step[4], step[7], step[11])
        for error in detail.errors:
            texts += (error[1], error[3])
        limits += _STEP_LIMITS * len(detail.steps) + _ERROR_LIMITS * len(detail.errors)
    masked = iter(mask(texts, limits))
    given, answer = next(masked), next(masked)
    into.results.extend(_result_row(now, o.trace_id, o.service, r, masked) for r in stored)
    passed = [_passed_entry(r, masked) for r in passing]
    agents = models = tools = packed_detail = None
    if detail is not None:
        agents = _json(detail.agents) if detail.agents else None
        names = [model for model, *_ in detail.models if model is not None]
        models = _json(names) if names else None
        tools = _json(detail.tools) if detail.tools else None
        packed_detail = _json(_detail(detail, masked))
    text = storable_values((o.trace_id, o.service, given, answer, o.variant))
    into.traces.append(
        (
            text[0],
            now,
            text[1],
            text[2],
            text[3],
            o.span_count,
            _number(o.duration_ms),
            int(o.has_error),
            _json(passed) if passed else None,
            agents,
            models,
            tools,
            packed_detail,
            text[4],
        )
    )


def pack_session(o: SessionOutcome, now: float, failing_only: bool) -> Packed:
    """One evaluated session's rows: its `sessions` row (upserted) and a `results` row per stored session-level
    result (trace_id: its last turn's, session_id set); with `results: failing` only a session with a failing
    result or a skip (not one of UNSTORED_SKIPS) is kept, and its passing results are not. Its turns' texts and
    its results' are masked in one scan and cut like a trace's."""
    session = o.session
    last = session.last_turn
    kept = [r for r in o.results if kept_by_store(r, failing_only)]
    completed_at = session.completed_at if session.completed_at is not None else now
    # an earlier completion's rows go even when this one keeps none (it passes now: nothing stale stays)
    completions = [(storable(session.session_id), completed_at)] if last is not None else []
    if last is None or (failing_only and not kept):
        return Packed([], [], [], [], [], completions, 0)
    packed = Packed([], [], [], [], [], completions, len(kept))
    texts: list[str | None] = []
    limits: list[int] = []
    for turn in session.turns:
        texts += (turn.user_message, turn.answer)
        limits += (MAX_TEXT, MAX_TEXT)
        for error in turn.errors:
            texts += (error.name, error.message)
            limits += _ERROR_LIMITS
    result_texts = _result_texts(kept)
    masked = iter(mask(texts + result_texts, limits + [MAX_TEXT] * len(result_texts)))
    turns = [
        [turn.trace_id, turn.start_ns, turn.end_ns, next(masked), next(masked), _names(turn.tool_calls),
         [[error.kind[:NAME], next(masked) or "", next(masked) or ""] for error in turn.errors],
         _names(turn.agents), turn.input_tokens, turn.output_tokens, _number(turn.cost_usd)]
        for turn in session.turns
    ]  # fmt: skip
    service = session.service or "unknown"
    trace_id, session_id = storable(last.trace_id), storable(session.session_id)
    packed.results.extend(_result_row(now, trace_id, service, r, masked, session_id) for r in kept)
    failed = sum(1 for r in kept if r.passed is False)
    packed.sessions.append(
        (
            *storable_values((session_id, service, session.source)),
            session.start_ns / 1e9,
            last.end_ns / 1e9,
            completed_at,
            session.ended,
            len(session.turns),
            session.turns_cut,
            session.total_tokens,
            _number(session.cost_usd),
            failed,
            _json(turns),
        )
    )
    signatures = [r.signature for r in kept if r.signature is not None and r.passed is False]
    if signatures:  # seen in every agent of the conversation
        agents = tuple(dict.fromkeys(a for turn in session.turns for a in storable_values(turn.agents) if a))
        service = storable(service)
        packed.sightings.extend(Sighting(sig, now, trace_id, service, agents, (), "", "") for sig in signatures)
    return packed


def _names(names: tuple[str, ...]) -> list[str]:
    """Tool or agent names as stored: each cut to NAME (they are not masked, as a trace's are not)."""
    return [name[:NAME] for name in names]


_STEP_LIMITS = [NAME, STEP_TEXT, STEP_TEXT]  # a step's name, error, text
_ERROR_LIMITS = [NAME, STEP_TEXT]  # an error span's name, error


def _result_texts(rows: list[ResultRow]) -> list[str | None]:
    return [text for r in rows for text in (r.explanation, r.details)]


def _result_row(
    now: float, trace_id: str, service: str, r: ResultRow, texts: Iterator[str | None], session_id: str | None = None
) -> tuple:
    signature = r.signature.id if r.signature is not None and r.passed is False else None
    return storable_values((now, trace_id, service, r.span_id, r.agent, r.model, r.evaluator, r.level, r.score,
                            r.passed, r.skip_reason, next(texts), next(texts), signature, session_id))  # fmt: skip


def _passed_entry(r: ResultRow, texts: Iterator[str | None]) -> tuple:
    """A passing result as its PASSED_FIELDS (explanation and details masked)."""
    return (r.evaluator, r.level, r.span_id, r.agent, r.model, _number(r.score), next(texts), next(texts))


def _detail(detail: TraceDetailRow, texts: Iterator[str | None]) -> dict:
    steps = [
        [span_id, parent, depth, kind, next(texts) or "", offset, duration, next(texts), model, input_tokens,
         output_tokens, next(texts), _number(usd), source]
        for span_id, parent, depth, kind, _, offset, duration, _, model, input_tokens, output_tokens, _, usd, source
        in detail.steps
    ]  # fmt: skip
    errors = [[span_id, next(texts) or "", kind, next(texts) or "error"] for span_id, _, kind, _ in detail.errors]
    models = [[*m[:4], _number(m[4]), *m[5:]] if len(m) > 4 else list(m) for m in detail.models]
    agents = [[agent, calls, _number(usd), unpriced] for agent, calls, usd, unpriced in detail.agent_spend]
    return {
        "models": models,
        "errors": errors,
        "steps": steps,
        "truncated": detail.steps_truncated,
        "cost": [_number(detail.cost_usd), detail.unpriced_calls],
        "agent_spend": agents,
        "input_source": None if detail.input_source is None else str(detail.input_source),
    }


def _number(value: float | None) -> float | None:
    """A number JSON can hold (NaN and infinities have no JSON form; the metrics leave them out too)."""
    return value if value is None or math.isfinite(value) else None
