"""Rule-based builtin evaluators of a whole trace: latency, token and cost budgets, errors, refusals."""

from __future__ import annotations

import math
import re
from typing import Any

from evaluators.sdk import BaseEvaluator, EvalResult, EvaluatorConfigError, Param, SkipReason, register
from evaluators.signatures import Failure
from evaluators.traces.model import LLMSpan, Trace

from ._common import DECAY_HELP, compile_patterns, decay_score, fmt_num, listing, shorten, text_of
from ._failures import first_cause, span_failure


def _over(within: bool, error_type: str, message: str) -> Failure | None:
    """The Failure of a trace over its budget (None within it): no measured value in it, they vary."""
    return None if within else Failure(step_kind="trace", error_type=error_type, message=message)


@register
class Latency(BaseEvaluator):
    """Trace latency: 1 at or below max_latency_ms, falling linearly to 0 at decay × it; threshold 1 = within budget."""

    name = "latency"
    level = "trace"
    kind = "rule"
    threshold = 1.0
    max_latency_ms = Param(30000.0, "latency budget of one trace, in milliseconds", min=0)
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def evaluate(self, trace: Trace) -> EvalResult:
        measured = trace.metrics.total_duration_ms
        if not measured or measured <= 0:
            return EvalResult.skip(SkipReason.NO_DATA, "no span timestamps to measure the trace's latency")
        limit = self.max_latency_ms
        within = measured <= limit
        verdict = "within" if within else "over"
        return EvalResult(
            score=decay_score(measured, limit, self.decay),
            explanation=f"trace took {fmt_num(measured)} ms, {verdict} the {fmt_num(limit)} ms budget",
            details={"latency_ms": measured, "max_latency_ms": limit},
            failure=_over(within, "too_slow", "the trace took longer than its latency budget"),
        )


@register
class TokenBudget(BaseEvaluator):
    """Tokens of the trace's LLM calls: 1 at or below max_tokens, decaying above; threshold 1 = within budget."""

    name = "token_budget"
    level = "trace"
    kind = "rule"
    threshold = 1.0
    max_tokens = Param(50000, "token budget of one trace (input + output tokens of all LLM calls)", min=0)
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def evaluate(self, trace: Trace) -> EvalResult:
        calls = trace.get_llm_calls()
        if not any(c.metrics.has_usage for c in calls):
            return EvalResult.skip(SkipReason.NO_DATA, "no LLM token usage recorded in the trace")
        usage = trace.metrics.token_usage
        used = usage.total_tokens or (usage.input_tokens + usage.output_tokens)
        limit = self.max_tokens
        within = used <= limit
        verdict = "within" if within else "over"
        return EvalResult(
            score=decay_score(used, limit, self.decay),
            explanation=(
                f"{used} tokens ({usage.input_tokens} in, {usage.output_tokens} out) over {len(calls)} LLM "
                f"call(s), {verdict} the {limit} token budget"
            ),
            details={
                "total_tokens": used,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "max_tokens": limit,
            },
            failure=_over(within, "over_token_budget", "the trace used more tokens than its budget"),
        )


# Approximate list prices in USD per 1,000 tokens [input, output], mid-2025; check your provider's pricing.
# A model matches its exact name or the longest entry it starts with ("gpt-4o-mini-2024-07-18" → "gpt-4o-mini").
DEFAULT_PRICES: dict[str, list[float]] = {
    "gpt-4o": [0.0025, 0.01],
    "gpt-4o-mini": [0.00015, 0.0006],
    "gpt-4.1": [0.002, 0.008],
    "gpt-4.1-mini": [0.0004, 0.0016],
    "gpt-4.1-nano": [0.0001, 0.0004],
    "gpt-4-turbo": [0.01, 0.03],
    "gpt-3.5-turbo": [0.0005, 0.0015],
    "o1": [0.015, 0.06],
    "o3": [0.002, 0.008],
    "o3-mini": [0.0011, 0.0044],
    "o4-mini": [0.0011, 0.0044],
    "gemini-1.5-flash": [0.000075, 0.0003],
    "gemini-1.5-pro": [0.00125, 0.005],
    "gemini-2.0-flash": [0.0001, 0.0004],
    "gemini-2.0-flash-lite": [0.000075, 0.0003],
    "gemini-2.5-flash": [0.0003, 0.0025],
    "gemini-2.5-flash-lite": [0.0001, 0.0004],
    "gemini-2.5-pro": [0.00125, 0.01],
    "claude-3-haiku": [0.00025, 0.00125],
    "claude-3-5-haiku": [0.0008, 0.004],
    "claude-3-5-sonnet": [0.003, 0.015],
    "claude-3-7-sonnet": [0.003, 0.015],
    "claude-sonnet-4": [0.003, 0.015],
    "claude-opus-4": [0.015, 0.075],
}


def _normalize_model(model: str) -> str:
    """`models/gemini-2.0-flash`, `openai/gpt-4o`, `GPT-4o` → the bare lower-case model name."""
    return model.strip().lower().rsplit("/", 1)[-1]


_PRICE_TABLES: dict[int, tuple[dict[str, list[float]], dict[str, tuple[str, list[float]]]]] = {}


def _price_table(prices: dict[str, list[float]]) -> dict[str, tuple[str, list[float]]]:
    """`prices` keyed by normalized model name, built once per prices dict (an evaluator's param)."""
    cached = _PRICE_TABLES.get(id(prices))
    if cached is not None and cached[0] is prices:
        return cached[1]
    table = {_normalize_model(k): (k, v) for k, v in prices.items()}
    if len(_PRICE_TABLES) < 64:  # a few evaluator instances; never grows with traffic
        _PRICE_TABLES[id(prices)] = (prices, table)
    return table


def price_for(model: str | None, prices: dict[str, list[float]]) -> tuple[str, list[float]] | None:
    """The (entry name, [input_per_1k, output_per_1k]) pricing `model`: exact match, else the longest prefix."""
    if not model:
        return None
    wanted = _normalize_model(model)
    table = _price_table(prices)
    if wanted in table:
        return table[wanted]
    prefixes = [k for k in table if wanted.startswith(k)]
    return table[max(prefixes, key=len)] if prefixes else None


def _check_prices(owner: str, prices: dict[str, Any]) -> None:
    for model, pair in prices.items():
        ok = (
            isinstance(model, str)
            and isinstance(pair, list | tuple)
            and len(pair) == 2
            and all(isinstance(p, int | float) and not isinstance(p, bool) and p >= 0 for p in pair)
        )
        if not ok:
            raise EvaluatorConfigError(
                f"{owner}: param 'prices' maps a model name to [input_per_1k, output_per_1k] (USD, >= 0); "
                f"got {model!r}: {pair!r}",
                param="prices",
            )


@register
class CostBudget(BaseEvaluator):
    """Trace cost in USD within a budget, from span cost attributes or an approximate price table."""

    name = "cost_budget"
    description = "Trace cost in USD: 1 at or below max_cost_usd, decaying above; threshold 1 = within budget."
    level = "trace"
    kind = "rule"
    threshold = 1.0
    max_cost_usd = Param(1.0, "cost budget of one trace, in USD", min=0)
    prices = Param(
        DEFAULT_PRICES,
        "model → [USD per 1K input tokens, USD per 1K output tokens], used when a span has no cost attribute "
        "(the defaults are approximate list prices; a model matches its name or the longest listed prefix)",
        type=dict,
    )
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        _check_prices(self.name, self._params["prices"])

    def _call_cost(self, call: LLMSpan, prices: dict[str, list[float]]) -> tuple[float | None, str]:
        """(cost, source) of one call: its recorded cost, else tokens × the table price, else (None, why)."""
        metrics = call.metrics
        if isinstance(metrics.cost, int | float) and math.isfinite(metrics.cost):
            return float(metrics.cost), "recorded"
        if not metrics.has_usage:
            return None, "no usage"
        priced = price_for(call.model, prices)
        if priced is None:
            return None, f"no price for {call.model or 'unknown model'}"
        in_price, out_price = priced[1]
        return (metrics.input_tokens * in_price + metrics.output_tokens * out_price) / 1000.0, "estimated"

    def evaluate(self, trace: Trace) -> EvalResult:
        prices = self.prices
        total, recorded, estimated, unpriced = 0.0, 0, 0, []
        for call in trace.get_llm_calls():
            cost, source = self._call_cost(call, prices)
            if cost is None:
                unpriced.append(source)
                continue
            total += max(cost, 0.0)
            recorded += source == "recorded"
            estimated += source == "estimated"
        if recorded + estimated == 0:
            why = f" ({listing(sorted(set(unpriced)))})" if unpriced else ""
            return EvalResult.skip(SkipReason.NO_DATA, f"no LLM call has a recorded cost or a known price{why}")
        limit = self.max_cost_usd
        within = total <= limit
        sources = [f"{recorded} recorded" if recorded else "", f"{estimated} estimated" if estimated else ""]
        note = f"; {len(unpriced)} call(s) without cost left out" if unpriced else ""
        return EvalResult(
            score=decay_score(total, limit, self.decay),
            explanation=(
                f"cost ${total:.6f} ({', '.join(s for s in sources if s)}), "
                f"{'within' if within else 'over'} the ${limit:g} budget{note}"
            ),
            details={
                "cost_usd": total,
                "max_cost_usd": limit,
                "calls_recorded": recorded,
                "calls_estimated": estimated,
                "calls_unpriced": len(unpriced),
            },
            failure=_over(within, "over_cost_budget", "the trace cost more than its budget"),
        )


@register
class ErrorFree(BaseEvaluator):
    """1 when no span of the trace failed (status ERROR), else 0 (fails at any threshold above 0); names them."""

    name = "error_free"
    level = "trace"
    kind = "rule"
    max_listed = Param(3, "how many failing spans the explanation names", min=1, max=50)

    def evaluate(self, trace: Trace) -> EvalResult:
        failed = trace.error_spans()
        if not failed:
            return EvalResult(1.0, explanation=f"no error spans among {trace.span_count} spans")
        described = [f"{span.span_name} ({shorten(span.error or 'error', 100)})" for span in failed]
        return EvalResult(
            0.0,
            explanation=f"{len(failed)} error span(s): {listing(described, self.max_listed)}",
            details={"error_count": len(failed), "error_spans": [s.span_name for s in failed[:20]]},
            failure=span_failure(first_cause(failed, trace.spans)),
        )


DEFAULT_REFUSAL_PATTERNS: list[str] = [
    r"\bI\s+(?:cannot|can\s+not)\b",
    r"\bI\s+can['’]?t\s+(?:help|assist|do\s+that|provide|answer|comply|complete|fulfil)",
    r"\bI(?:['’]m|\s+am)\s+(?:unable|not\s+able)\s+to\b",
    r"\bI\s+(?:won['’]?t|will\s+not)\s+be\s+able\s+to\b",
    r"\bas\s+an\s+AI\b",
    r"\bsorry,?\s+(?:but\s+)?I\s+(?:couldn['’]?t|could\s+not|can['’]?t|cannot|wasn['’]?t\s+able|was\s+unable)",
    r"\bI\s+(?:must|have\s+to)\s+(?:decline|refuse)\b",
    r"\bI\s+give\s+up\b",
]


@register
class Refusal(BaseEvaluator):
    """0 when the final answer refuses or gives up (matches a refusal pattern) or is empty, else 1."""

    name = "refusal"
    level = "trace"
    kind = "rule"
    patterns = Param(DEFAULT_REFUSAL_PATTERNS, "regexes (case-insensitive) that mark a refusal or giving up", type=list)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._compiled = compile_patterns(self.name, "patterns", self._params["patterns"], re.IGNORECASE)

    def evaluate(self, trace: Trace) -> EvalResult:
        if trace.output is None:
            return EvalResult.skip(SkipReason.NO_DATA, "the trace recorded no final answer")
        answer = text_of(trace.output).strip()
        if not answer:
            return EvalResult(
                0.0,
                explanation="the final answer is empty: the agent said nothing",
                failure=Failure(step_kind="trace", error_type="empty_answer", message="the final answer is empty"),
            )
        for pattern in self._compiled:
            match = pattern.search(answer)
            if match:
                return EvalResult(
                    0.0,
                    explanation=f"the final answer refuses or gives up: {shorten(match.group(0), 60)!r} "
                    f"in {shorten(answer, 100)!r}",
                    details={"matched": shorten(match.group(0), 60), "pattern": pattern.pattern},
                    # the pattern, not the matched words: "Sorry, I couldn't" and "sorry I could not" are one mode
                    failure=Failure(step_kind="trace", error_type="refusal", message=pattern.pattern),
                )
        return EvalResult(1.0, explanation=f"no refusal pattern in the final answer ({len(answer)} chars)")
