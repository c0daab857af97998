"""What an evaluation produces: the compact rows of a trace's results and figures, for the result store and the
metrics tally (engine/batch_run.py), the judgements still to make, late results, evaluated conversations.

Plain tuples (NamedTuple), built once per result; text from traces is bounded here, where it is evaluated, to a
little more than the store keeps (`MASK_MARGIN`): the store masks secrets and PII, then cuts to `MAX_TEXT`, so
a secret cut at the limit is still recognised and masked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from monitor.json_text import compact_json_or_str

if TYPE_CHECKING:
    from evaluators.sdk import EvalResult
    from evaluators.sessions import Session
    from evaluators.signatures import FailureSignature

MAX_TEXT = 4000  # characters the store keeps of a text
MASK_MARGIN = 64  # characters kept beyond a limit until the text is masked
# Skips the result store does not keep: counted in the metrics (`agent_eval_skips_total{reason}`), never a row, and
# never what keeps a trace under `results: failing`. A sampled-out evaluator did not run; one with no data had
# nothing to measure (pii_leak on an LLM step that only calls tools). On typical agent traces most traces have such
# a skip: stored, they were 6 of the 10 rows a trace wrote, and `results: failing` kept nearly every trace.
UNSTORED_SKIPS = frozenset({"sampled_out", "no_data"})


def bounded(text: Any, limit: int = MAX_TEXT + MASK_MARGIN) -> str | None:
    """`text` as a string of at most `limit` characters (JSON for anything not a string); None stays None."""
    if text is None:
        return None
    value = text if isinstance(text, str) else compact_json_or_str(text)
    return value if len(value) <= limit else value[: limit - 1] + "…"


class ResultRow(NamedTuple):
    """One evaluator's result on one dispatch unit (trace, agent or LLM call)."""

    span_id: str | None
    agent: str | None
    model: str | None
    evaluator: str  # the `evaluator` metric label
    level: str
    score: float | None
    passed: bool | None  # None for a skip
    skip_reason: str | None
    explanation: str | None  # bounded
    details: str | None  # JSON, bounded; None when empty
    duration_seconds: float
    signature: FailureSignature | None = None  # a failing result's failure signature (None for the others)
    external: bool = False  # an application's own evaluation (a gen_ai.evaluation.result event), not the daemon's


def kept_by_store(row: ResultRow, failing_only: bool) -> bool:
    """Whether the result store keeps `row`: a passing result unless `failing_only` (`results: failing`), a failing
    one always, a skip unless its reason is one of UNSTORED_SKIPS."""
    return not failing_only if row.passed else row.skip_reason not in UNSTORED_SKIPS


def result_row(
    result: EvalResult,
    *,
    span_id: str | None,
    agent: str | None,
    model: str | None,
    evaluator: str,
    level: str,
    seconds: float,
    signature: FailureSignature | None = None,
) -> ResultRow:
    """The row of one evaluator's `result` on one dispatch unit (its explanation and details bounded)."""
    details = bounded(compact_json_or_str(result.details)) if result.details else None
    explanation: str | None = result.explanation
    if explanation and len(explanation) > MAX_TEXT + MASK_MARGIN:
        explanation = bounded(explanation)
    skip = result.skip_reason
    passed = result.passed if skip is None else None
    return ResultRow(
        span_id, agent, model, evaluator, level, result.score, passed, None if skip is None else str(skip),
        explanation, details, seconds, signature,
    )  # fmt: skip


class CallFigures(NamedTuple):
    """One LLM call's figures for the metrics: tokens by kind and what it cost."""

    model: str | None
    agent: str  # the agent that made the call, "" when none
    provider: str  # the price table's provider id, else the one the span names, else ""
    ok: bool  # the call's span did not fail
    tokens: tuple[int, int, int, int, int] | None  # by `evaluators.pricing.TOKEN_KINDS`; None: no usage reported
    cost_usd: float | None  # None: unpriced (no usage, or a model with no known price)


class TraceOutcome(NamedTuple):
    """One evaluated trace: what its metrics need, what the store keeps, and every result row."""

    trace_id: str
    service: str  # the trace's service name, "unknown" when it has none
    duration_seconds: float
    has_error: bool
    calls: tuple[CallFigures, ...]  # per LLM call
    tools: tuple[tuple[str, bool], ...]  # (tool, ok) per tool call
    input: str | None  # bounded
    output: str | None  # bounded
    span_count: int
    duration_ms: float
    last_seen: float  # time.monotonic() of the trace's last span (CLOCK_MONOTONIC is system-wide on Linux)
    results: tuple[ResultRow, ...]
    judge_jobs: tuple[JudgeJob, ...] = ()  # the judgements still to make (LLM judges answer later)
    detail: TraceDetailRow | None = None  # what the review shows besides the results (None: not stored)
    variant: str = ""  # the agent version that produced it (variants.attribute); "" when unset or missing
    pair_keys: tuple[tuple[str, str], ...] = ()  # (pair_by, key): what a pairwise judge pairs it on
    version: str = ""  # the `service.version` of the trace's resource ("" when it has none)
    turn: tuple | None = None  # a conversation's turn (engine/turn_wire.py) when the trace has a session id
    # (dimension, value) pairs the store keeps for explanations (monitor/explain/dimensions.py), each value cleaned
    # and bounded; () when none are kept (explain off, no store)
    dimensions: tuple[tuple[str, str], ...] = ()
    root_span_id: str = ""  # the trace's root span (what a trace-level result is about); "" when it has none


class TraceDetailRow(NamedTuple):
    """A trace's steps and summary for the review (`trace_detail.py`), bounded; the store masks its text.

    Spend: a cost is USD, None when no call of the group was priced (never a made-up 0); an unpriced call is one
    with usage and no known price (as `agent_llm_unpriced_calls_total` counts them)."""

    agents: tuple[str, ...]  # agent names, in order of first appearance
    # (model, calls, input tokens, output tokens[, cost USD, unpriced calls]), by first call; tokens None: no call
    # of the model recorded usage
    models: tuple[tuple, ...]
    tools: tuple[str, ...]  # the tools called, in order of first call
    errors: tuple[tuple[str, str, str, str], ...]  # (span_id, name, kind, error) of every failed span (capped)
    steps: tuple[tuple, ...]  # the step tree, depth-first, as STEP_FIELDS
    steps_truncated: bool  # `steps` stops at the store's cap
    cost_usd: float | None = None  # the trace's spend: the sum of its priced calls
    unpriced_calls: int = 0
    agent_spend: tuple[tuple[str, int, float | None, int], ...] = ()  # (agent, calls, cost USD, unpriced calls)
    input_source: str | None = None  # the rule that chose the trace's input (Trace.input_source)


STEP_FIELDS = (
    "span_id",
    "parent_span_id",
    "depth",
    "kind",
    "name",
    "start_offset_ms",
    "duration_ms",
    "error",
    "model",
    "input_tokens",
    "output_tokens",
    "text",
    "cost_usd",  # llm: what the call cost (None: unpriced or no usage)
    "cost_source",  # llm: span | price_table | override (None when unpriced)
)


class JudgeJob(NamedTuple):
    """One judgement to make for a trace: who asks (the judge's label) about what (the dispatch unit), and the
    request (`evaluators.judges.JudgeRequest`: plain strings, built where the views are)."""

    trace_id: str
    service: str
    evaluator: str  # the judge's `evaluator` metric label
    level: str
    span_id: str | None
    agent: str | None
    model: str | None
    request: Any
    variant: str = ""  # the trace's variant (the `variant` label of the judge's result)
    version: str = ""  # the trace's `service.version`


class LateResults(NamedTuple):
    """Results that arrive after their trace was stored (LLM judges): added to that trace's stored results."""

    trace_id: str
    service: str
    results: tuple[ResultRow, ...]
    variant: str = ""  # the trace's variant and version (where its failure signatures were seen)
    version: str = ""
    resolved: tuple[str, ...] = ()  # the waiting judgements (`pending_judgements` ids) these results settle


class SessionOutcome(NamedTuple):
    """An evaluated conversation for the store: the session (its turns, how and when it completed) and session-level
    result rows, its rule evaluators' or, later, its LLM judges'. Every write of one completed session (same
    `session.completed_at`) adds to its row's failing count; a session completed again replaces its row."""

    session: Session
    results: tuple[ResultRow, ...]
    resolved: tuple[str, ...] = ()  # the waiting judgements (`pending_judgements` ids) these results settle


class TraceFailure(NamedTuple):
    """A trace whose views or evaluation failed as a whole (counted as dropped, reason evaluation_error)."""

    trace_id: str
    error: str
