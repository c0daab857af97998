"""Rule-based builtin evaluators of a whole trace: latency, token and cost budgets, errors, refusals, the answer's
language."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from evaluators.language import LANGUAGE_CHARS, detect_language, letters
from evaluators.pricing import ModelPrice, call_cost
from evaluators.sdk import BaseEvaluator, EvalResult, EvaluatorConfigError, Param, SkipReason, register
from evaluators.signatures import Failure
from evaluators.signatures.span_failures import first_cause, span_failure
from evaluators.traces.model import LLMSpan, Trace

from ._common import DECAY_HELP, PatternList, decay_score, fmt_num, listing, shorten, text_of


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
    """Trace cost in USD within a budget: span cost attributes, else genai-prices' table or a `prices` override."""

    name = "cost_budget"
    description = "Trace cost in USD: 1 at or below max_cost_usd, decaying above; threshold 1 = within budget."
    level = "trace"
    kind = "rule"
    threshold = 1.0
    max_cost_usd = Param(1.0, "cost budget of one trace, in USD", min=0)
    prices = Param(
        {},
        "model → [USD per 1K input tokens, USD per 1K output tokens]: overrides (negotiated, self-hosted) that win "
        "over the genai-prices table used when a span has no cost attribute; a model matches its name, a glob "
        "(`my-llama-*`) or a name it is a dated version of (`gpt-4o` for `gpt-4o-2024-08-06`)",
        type=dict,
    )
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        _check_prices(self.name, self._params["prices"])
        self._overrides: Mapping[str, ModelPrice] = {
            model: ModelPrice(input=pair[0] * 1000, output=pair[1] * 1000)
            for model, pair in self._params["prices"].items()
        }

    def with_pricing(self, overrides: Mapping[str, ModelPrice]) -> CostBudget:
        """This evaluator pricing with the daemon's `pricing.models` too (its own `prices` win over them), so the
        rule and the spend metrics price a call alike."""
        combined = copy.copy(self)
        combined._overrides = {**overrides, **self._overrides} if self._overrides else overrides
        return combined

    def _call_cost(self, call: LLMSpan) -> tuple[float | None, str]:
        """(cost, source) of one call (`evaluators.pricing.call_cost`), else (None, why)."""
        cost = call_cost(call, self._overrides)
        if cost is not None:
            return cost.usd, cost.source
        if call.usage is None:
            return None, "no usage"
        return None, f"no price for {call.model or 'unknown model'}"

    def evaluate(self, trace: Trace) -> EvalResult:
        total, counts, unpriced = 0.0, {"span": 0, "price_table": 0, "override": 0}, []
        for call in trace.get_llm_calls():
            cost, source = self._call_cost(call)
            if cost is None:
                unpriced.append(source)
                continue
            total += max(cost, 0.0)
            counts[source] += 1
        if not any(counts.values()):
            why = f" ({listing(sorted(set(unpriced)))})" if unpriced else ""
            return EvalResult.skip(SkipReason.NO_DATA, f"no LLM call has a recorded cost or a known price{why}")
        limit = self.max_cost_usd
        within = total <= limit
        labels = {"span": "reported by the span", "price_table": "from the price table", "override": "from overrides"}
        sources = ", ".join(f"{n} {labels[k]}" for k, n in counts.items() if n)
        note = f"; {len(unpriced)} unpriced call(s) left out ({listing(sorted(set(unpriced)))})" if unpriced else ""
        return EvalResult(
            score=decay_score(total, limit, self.decay),
            explanation=f"cost ${total:.6f} ({sources}), {'within' if within else 'over'} the ${limit:g} budget{note}",
            details={
                "cost_usd": total,
                "max_cost_usd": limit,
                "calls_recorded": counts["span"],
                "calls_estimated": counts["price_table"] + counts["override"],
                "calls_price_table": counts["price_table"],
                "calls_override": counts["override"],
                "calls_unpriced": len(unpriced),
                "unpriced": sorted(set(unpriced)),
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
        self._patterns = PatternList(self.name, "patterns", self._params["patterns"], re.IGNORECASE)

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
        found = self._patterns.first_match(answer)
        if found is not None:
            pattern, match = found
            return EvalResult(
                0.0,
                explanation=f"the final answer refuses or gives up: {shorten(match.group(0), 60)!r} "
                f"in {shorten(answer, 100)!r}",
                details={"matched": shorten(match.group(0), 60), "pattern": pattern.pattern},
                # the pattern, not the matched words: "Sorry, I couldn't" and "sorry I could not" are one mode
                failure=Failure(step_kind="trace", error_type="refusal", message=pattern.pattern),
            )
        return EvalResult(1.0, explanation=f"no refusal pattern in the final answer ({len(answer)} chars)")


def prose(text: str) -> str:
    """`text` without its fenced code blocks (```...```) and inline code (`...`): what a language is read from."""
    if "`" not in text:
        return text
    outside = text.split("```")[::2]  # the even pieces lie outside the fences
    return " ".join(piece for i, piece in enumerate(" ".join(outside).split("`")) if i % 2 == 0)


@register
class ResponseLanguage(BaseEvaluator):
    """1 when the final answer is in the language of the user's request, 0 when it is in another (py3langid,
    in-package model); skips a text too short to tell or classified without confidence."""

    name = "response_language"
    level = "trace"
    kind = "rule"
    min_letters = Param(20, "fewest letters (code left out) each text needs before its language is read", min=1)
    min_probability = Param(
        0.7, "normalised probability (0–1) a text's language needs; below it the trace is skipped", min=0.0, max=1.0
    )
    max_chars = Param(
        LANGUAGE_CHARS,
        "characters of the request classified (the default is the cut explanations' input.language reads, so one "
        "classification of the request serves both)",
        min=20,
        max=5000,
    )
    answer_chars = Param(
        60, "characters of the answer classified (its first sentence; the cost is linear in them)", min=20, max=5000
    )

    def evaluate(self, trace: Trace) -> EvalResult:
        # the request's text as it is (not stripped): the cut explanations' input.language classifies, remembered
        question, answer = text_of(trace.input), text_of(trace.output).strip()
        if not question.strip() or not answer:
            return EvalResult.skip(SkipReason.NO_DATA, "the trace recorded no request or no final answer")
        found = []
        for role, text, chars in (("request", question, self.max_chars), ("answer", answer, self.answer_chars)):
            cut = prose(text[: chars * 2])[:chars]
            if letters(cut) < self.min_letters:
                return EvalResult.skip(SkipReason.NOT_APPLICABLE, f"the {role} is too short to tell its language")
            detected = detect_language(cut)
            if detected is None:
                return EvalResult.skip(SkipReason.ERROR, "no language model (py3langid could not load)")
            if detected.probability < self.min_probability:
                why = f"{detected.language} at {detected.probability:.2f} < {self.min_probability:g}"
                return EvalResult.skip(SkipReason.NOT_APPLICABLE, f"the {role}'s language is uncertain ({why})")
            found.append(detected)
        asked, answered = found
        details = {
            "request_language": asked.language,
            "request_probability": round(asked.probability, 3),
            "answer_language": answered.language,
            "answer_probability": round(answered.probability, 3),
        }
        said = f"request in {asked.language} ({asked.probability:.2f}), answer in {answered.language} "
        said += f"({answered.probability:.2f})"
        if asked.language == answered.language:
            return EvalResult(1.0, explanation=said, details=details)
        return EvalResult(
            0.0,
            explanation=f"the answer is not in the request's language: {said}",
            details=details,
            failure=Failure(
                step_kind="trace",
                error_type="wrong_language",
                message=f"answered in {answered.language} to a request in {asked.language}",
            ),
        )
