"""detail_row_of(trace): the step tree and summary the review shows of a trace, built from its views.

It runs where the trace is evaluated (a worker process), once per stored trace. The steps are `inspect`'s tree
(`step_tree`): agent → LLM call → tool call, retrieval, handoff, depth-first in start order, cut at `max_steps`
(a prefix of the depth-first order, so every kept step's parent is kept). Text is bounded here (a little more
than stored, see rows.MASK_MARGIN); the store masks it and cuts it to `STEP_TEXT`.

Spend: each LLM step's cost and its source, and the cost per model, per agent and of the whole trace, from
`evaluators.pricing.call_cost` (the span's own cost, else the price table or a `pricing.models` override).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluators.pricing import CallCost, ModelPrice, call_cost
from evaluators.traces.model import Trace
from evaluators.traces.spans import AgentSpan, HandoffSpan, LLMSpan, RetrieverSpan, Span, ToolSpan
from monitor.config.store import StoreConfig
from monitor.json_text import compact_json_or_str
from monitor.outcomes import MASK_MARGIN, TraceDetailRow
from monitor.store.step_tree import step_tree

STEP_TEXT = 500  # characters kept of a step's text and error
NAME = 200  # characters kept of a name
MAX_STEPS: int = StoreConfig.model_fields["max_steps"].default  # store.max_steps's default
MAX_LISTED = 100  # agents, models, tools and error spans listed per trace


_KINDS: dict[type, str] = {
    LLMSpan: "llm",
    HandoffSpan: "handoff",
    ToolSpan: "tool",
    RetrieverSpan: "retrieval",
    AgentSpan: "agent",
    Span: "span",
}


def step_kind(span: Span, wrapper: bool = False) -> str:
    """The review's StepKind of a span."""
    if wrapper:
        return "span"
    kind = _KINDS.get(type(span))
    if kind is not None:
        return kind
    for view, name in _KINDS.items():  # a subclass: HandoffSpan is looked at before ToolSpan
        if isinstance(span, view):
            return name
    return "span"


def step_name(span: Span, kind: str) -> str:
    if kind == "handoff":
        assert isinstance(span, HandoffSpan)
        name = f"{span.agent_name or '?'} → {span.to_agent or '?'}"
    elif kind in ("tool", "agent"):
        name = span.name  # type: ignore[attr-defined]  # ToolSpan and AgentSpan have a name
    else:
        name = span.span_name
    return _cut(name, NAME) or ""


Costs = Mapping[str, CallCost | None]  # an LLM call's span id → what it cost (None: unpriced or no usage)


def call_costs(trace: Trace, prices: Mapping[str, ModelPrice] | None = None) -> dict[str, CallCost | None]:
    """What each LLM call of `trace` cost, by span id (`prices`: the `pricing.models` overrides)."""
    return {call.span_id: call_cost(call, prices) for call in trace.get_llm_calls()}


def detail_row_of(
    trace: Trace,
    max_steps: int = MAX_STEPS,
    prices: Mapping[str, ModelPrice] | None = None,
    costs: Costs | None = None,
) -> TraceDetailRow:
    """The TraceDetailRow of a built trace (text bounded, not yet masked). `costs`: each call's cost, when the
    caller has them (else priced here with `prices`)."""
    if costs is None:
        costs = call_costs(trace, prices)
    start = trace.start_time
    steps: list[tuple] = []
    errors: list[tuple[str, str, str, str]] = []
    for span, depth, wrapper in step_tree(trace):
        kind = step_kind(span, wrapper)
        failed = span.record.is_error
        if failed and len(errors) < MAX_LISTED:
            errors.append((span.span_id, step_name(span, kind), kind, _cut(span.error, STEP_TEXT) or "error"))
        if len(steps) < max_steps:  # a prefix of the depth-first order: every parent is among the steps
            steps.append(_step(span, depth, kind, failed, start, costs))
    total, unpriced, by_agent = _spend(trace, costs)
    return TraceDetailRow(
        agents=tuple(_name(a) for a in trace.agent_names[:MAX_LISTED]),
        models=_models(trace, costs),
        tools=tuple(_name(t) for t in dict.fromkeys(t.name for t in trace.get_tool_calls()))[:MAX_LISTED],
        errors=tuple(errors),
        steps=tuple(steps),
        steps_truncated=len(steps) < trace.span_count,
        cost_usd=total,
        unpriced_calls=unpriced,
        agent_spend=by_agent,
        input_source=trace.input_source,
    )


def _unpriced(call: LLMSpan, cost: CallCost | None) -> bool:
    """A call with usage and no price (a call without usage, e.g. a failed one, is neither priced nor not)."""
    return cost is None and call.usage is not None


def _spend(trace: Trace, costs: Costs) -> tuple[float | None, int, tuple[tuple[str, int, float | None, int], ...]]:
    """(the trace's cost, its unpriced calls, (agent, calls, cost, unpriced calls) per agent by first call)."""
    total: float | None = None
    unpriced = 0
    agents: dict[str, list] = {}  # calls, cost, unpriced
    for call in trace.get_llm_calls():
        cost = costs.get(call.span_id)
        name = _name(call.agent_name or "")
        spent = agents.get(name)
        if spent is None and len(agents) < MAX_LISTED:
            spent = agents[name] = [0, None, 0]
        missing = _unpriced(call, cost)
        unpriced += missing
        if cost is not None:
            total = (total or 0.0) + cost.usd
        if spent is not None:
            spent[0] += 1
            spent[2] += missing
            if cost is not None:
                spent[1] = (spent[1] or 0.0) + cost.usd
    return total, unpriced, tuple((name, calls, usd, n) for name, (calls, usd, n) in agents.items())


def _step(span: Span, depth: int, kind: str, failed: bool, trace_start: int, costs: Costs) -> tuple:
    record = span.record
    parent = record.parent_span_id if depth else None
    begin = record.start_time_unix_nano
    offset = (begin - trace_start) / 1e6 if begin > 0 and trace_start > 0 else 0.0
    error = _cut(span.error, STEP_TEXT) if failed else None
    model = input_tokens = output_tokens = text = usd = source = None
    if kind == "llm":
        assert isinstance(span, LLMSpan)
        model = span.model
        model = _name(model) if model is not None else None
        usage = span.metrics
        if usage.has_usage:
            input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
        text = span.response
        if not text and span.tool_calls:
            text = "→ calls " + ", ".join(call.name for call in span.tool_calls)
        text = _cut(text, STEP_TEXT)
        cost = costs.get(span.span_id)
        if cost is not None:
            usd, source = cost.usd, cost.source
    elif kind == "tool":
        assert isinstance(span, ToolSpan)
        arguments = _cut(_as_text(span.recorded_arguments), STEP_TEXT // 2) or ""
        result = span.recorded_result  # as recorded: parsing it (span.result) would cost more than the rest
        text = arguments if result is None else f"{arguments} → {_cut(_as_text(result), STEP_TEXT // 2)}"
    elif kind == "retrieval":
        assert isinstance(span, RetrieverSpan)
        text = _cut(span.query, STEP_TEXT)
    return (record.span_id, parent, depth, kind, step_name(span, kind), offset, record.duration_ms, error, model,
            input_tokens, output_tokens, text, usd, source)  # fmt: skip


def _models(trace: Trace, costs: Costs) -> tuple[tuple, ...]:
    """(model, calls, input tokens, output tokens, cost USD, unpriced calls) per model; the tokens None when no
    call of the model recorded its usage (a failed call), not 0; the cost None when none of its calls was priced."""
    usage: dict[str | None, list] = {}  # calls, input, output, calls with usage, cost, unpriced
    for call in trace.get_llm_calls():  # by start time: the first model first
        model = _name(call.model) if call.model is not None else None
        counts = usage.get(model)
        if counts is None:
            if len(usage) >= MAX_LISTED:
                continue
            counts = usage[model] = [0, 0, 0, 0, None, 0]
        metrics = call.metrics
        cost = costs.get(call.span_id)
        counts[0] += 1
        counts[5] += _unpriced(call, cost)
        if cost is not None:
            counts[4] = (counts[4] or 0.0) + cost.usd
        if metrics.has_usage:
            counts[1] += metrics.input_tokens
            counts[2] += metrics.output_tokens
            counts[3] += 1
    return tuple(
        (model, calls, tokens_in if known else None, tokens_out if known else None, usd, unpriced)
        for model, (calls, tokens_in, tokens_out, known, usd, unpriced) in usage.items()
    )


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    try:
        return compact_json_or_str(value)
    except ValueError:  # a circular structure
        return str(value)


def _name(text: str) -> str:
    """An identifier (agent, model, tool): stored as the metrics label it is, not masked, cut at NAME."""
    return text if len(text) <= NAME else text[: NAME - 1] + "…"


def _cut(text: str | None, limit: int) -> str | None:
    """`text` bounded to `limit` plus the masking margin (the store masks it, then cuts it to `limit`)."""
    if text is None:
        return None
    limit += MASK_MARGIN
    return text if len(text) <= limit else text[: limit - 1] + "…"
