"""Rule-based builtin evaluators of one LLM call: finish reason, response length and emptiness, content checks,
PII and credentials."""

from __future__ import annotations

import functools
import re
from typing import Any

from evaluators.sdk import BaseEvaluator, EvalResult, Param, SkipReason, register
from evaluators.signatures import Failure
from evaluators.signatures.span_failures import llm_step_name
from evaluators.traces.model import LLMSpan

from ..redaction import PII_KINDS, find_pii
from ._common import canonical_arguments, compile_patterns, listing, response_state, shorten, text_of
from ._secrets import DEFAULT_DETECTORS, SPECS, SecretScanner

TRUNCATED_REASONS = ("length", "max_tokens", "max_output_tokens", "token_limit")
BLOCKED_REASONS = (
    "content_filter",
    "safety",
    "recitation",
    "blocklist",
    "prohibited_content",
    "spii",
    "image_safety",
    "refusal",
    "malformed_function_call",
    "error",
)


def normalize_reason(reason: Any) -> str:
    """`FinishReason.MAX_TOKENS`, `FINISH_REASON_SAFETY`, ` Length ` → `max_tokens`, `safety`, `length`."""
    text = str(reason).strip().lower().rsplit(".", 1)[-1]
    return text.removeprefix("finish_reason_")


@functools.lru_cache(maxsize=32)
def _failing_reasons(fail_on: tuple[Any, ...]) -> frozenset[str]:
    return frozenset(normalize_reason(r) for r in fail_on if isinstance(r, str))


def _llm_failure(call: LLMSpan, error_type: str, message: str) -> Failure:
    """A failure of one LLM call: step llm, the call's provider (not its model: `span_step`)."""
    return Failure(step_kind="llm", step_name=llm_step_name(call), error_type=error_type, message=message)


def _unrecorded(call: LLMSpan) -> EvalResult:
    return EvalResult.skip(
        SkipReason.NO_DATA,
        f"response content not recorded ({call.metrics.output_tokens} output tokens, no text or tool calls captured)",
    )


@register
class FinishReason(BaseEvaluator):
    """0 when the call stopped abnormally (cut off by the token limit, blocked by a safety filter), else 1."""

    name = "finish_reason"
    level = "llm"
    kind = "rule"
    fail_on = Param(
        [*TRUNCATED_REASONS, *BLOCKED_REASONS],
        "finish reasons (case-insensitive; OpenAI, Anthropic and Gemini spellings) that fail the call",
        type=list,
    )

    def evaluate(self, call: LLMSpan) -> EvalResult:
        reasons = [str(r) for r in call.finish_reasons or [] if r is not None and str(r).strip()]
        if not reasons:
            return EvalResult.skip(SkipReason.NO_DATA, "no finish reason recorded")
        failing = _failing_reasons(tuple(self.fail_on))
        bad = [r for r in reasons if normalize_reason(r) in failing]
        if not bad:
            text = f"finish reason(s) {', '.join(reasons)}"
            return EvalResult(1.0, explanation=text, details={"finish_reasons": reasons})
        truncated = any(normalize_reason(r) in TRUNCATED_REASONS for r in bad)
        why = "the response was cut off by the token limit" if truncated else "the response was stopped or blocked"
        return EvalResult(
            0.0,
            explanation=f"finish reason {', '.join(bad)}: {why}",
            details={"finish_reasons": reasons, "failing": bad},
            failure=_llm_failure(call, normalize_reason(bad[0]), why),
        )


@register
class ResponseLength(BaseEvaluator):
    """1 when the response text's length is within [min_chars, max_chars], else 0."""

    name = "response_length"
    level = "llm"
    kind = "rule"
    min_chars = Param(1, "fewest characters a text response may have", min=0)
    max_chars = Param(20000, "most characters a text response may have", min=1)

    def evaluate(self, call: LLMSpan) -> EvalResult:
        state = response_state(call)
        if state == "tool_only":
            return EvalResult.skip(SkipReason.NO_DATA, f"tool-call-only response ({len(call.tool_calls)} call(s))")
        if state == "unrecorded":
            return _unrecorded(call)
        length = len(text_of(call.response).strip())
        low, high = self.min_chars, self.max_chars
        within = low <= length <= high
        failure = None
        if within:
            text = f"response has {length} chars, within [{low}, {high}]"
        else:
            short = length < low
            bound = "below" if short else "above"
            failure = _llm_failure(call, "too_short" if short else "too_long", f"the response is {bound} its bounds")
            text = f"response has {length} chars, {'below the minimum' if length < low else 'above the maximum'} "
            text += f"of {low if length < low else high}"
        return EvalResult(
            1.0 if within else 0.0,
            explanation=text,
            details={"chars": length, "min_chars": low, "max_chars": high},
            failure=failure,
        )


@register
class NonEmptyResponse(BaseEvaluator):
    """1 when the call produced text or tool calls, 0 when its response is empty."""

    name = "non_empty_response"
    level = "llm"
    kind = "rule"

    def evaluate(self, call: LLMSpan) -> EvalResult:
        state = response_state(call)
        if state == "unrecorded":
            return _unrecorded(call)
        if state == "text":
            return EvalResult(1.0, explanation=f"response has {len(text_of(call.response).strip())} chars of text")
        if state == "tool_only":
            names = listing([c.name or "<unnamed>" for c in call.tool_calls], 5, ", ")
            return EvalResult(1.0, explanation=f"response requests {len(call.tool_calls)} tool call(s): {names}")
        reasons = ", ".join(call.finish_reasons or []) or "none recorded"
        return EvalResult(
            0.0,
            explanation=f"empty response: no text and no tool calls (finish reason: {reasons})",
            details={},
            failure=_llm_failure(call, "empty_response", "no text and no tool calls"),
        )


@register
class ProhibitedContent(BaseEvaluator):
    """0 when the response contains a configured prohibited string or regex, else 1; skips when none is configured."""

    name = "prohibited_content"
    level = "llm"
    kind = "rule"
    needs_config = True  # nothing to look for until strings or patterns are configured
    strings = Param([], "substrings the response must not contain", type=list)
    patterns = Param([], "regexes the response must not match", type=list)
    case_sensitive = Param(False, "match strings and patterns case-sensitively")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        flags = 0 if self._params["case_sensitive"] else re.IGNORECASE
        self._compiled = compile_patterns(self.name, "patterns", self._params["patterns"], flags)

    def evaluate(self, call: LLMSpan) -> EvalResult:
        strings = [s for s in self.strings if isinstance(s, str) and s]
        if not strings and not self._compiled:
            return EvalResult.skip(
                SkipReason.NOT_CONFIGURED, "no prohibited strings or patterns configured (params strings, patterns)"
            )
        text = text_of(call.response)
        if not text.strip():
            return EvalResult.skip(SkipReason.NO_DATA, "the response has no text")
        haystack = text if self.case_sensitive else text.casefold()
        hits = [repr(s) for s in strings if (s if self.case_sensitive else s.casefold()) in haystack]
        found = list(hits)  # what matched, as configured (not the matched text): the failure's message
        for pattern in self._compiled:
            if m := pattern.search(text):
                hits.append(f"/{pattern.pattern}/ ({shorten(m.group(0), 40)!r})")
                found.append(f"/{pattern.pattern}/")
        checked = len(strings) + len(self._compiled)
        if not hits:
            return EvalResult(1.0, explanation=f"none of {checked} prohibited string(s)/pattern(s) found")
        return EvalResult(
            0.0,
            explanation=f"prohibited content found: {listing(hits, 5, ', ')}",
            details={"matches": len(hits), "checked": checked},
            failure=_llm_failure(call, "prohibited_content", found[0]),
        )


@register
class PIILeak(BaseEvaluator):
    """0 when the response text contains PII or secrets (emails, phones, cards, national ids, keys), else 1."""

    name = "pii_leak"
    level = "llm"
    kind = "rule"
    kinds = Param(list(PII_KINDS), "detectors to run: " + ", ".join(PII_KINDS), choices=list(PII_KINDS), type=list)

    def evaluate(self, call: LLMSpan) -> EvalResult:
        text = text_of(call.response)
        if not text.strip():
            return EvalResult.skip(SkipReason.NO_DATA, "the response has no text")
        findings = find_pii(text, self.kinds)
        if not findings:
            checked = f"{len(self.kinds)} detector(s), {len(text)} chars"
            return EvalResult(1.0, explanation=f"no PII or secrets found ({checked})")
        counts: dict[str, int] = {}
        for finding in findings:
            counts[finding.kind] = counts.get(finding.kind, 0) + 1
        samples = [f"{f.kind} {f.sample}" for f in findings]
        return EvalResult(
            0.0,
            explanation=f"{len(findings)} PII/secret item(s) in the response: {listing(samples, 5, ', ')}",
            details={"counts": counts, "samples": [{"kind": f.kind, "sample": f.sample} for f in findings[:20]]},
            failure=_llm_failure(call, "pii", "found: " + ", ".join(sorted(counts))),
        )


@register
class SecretLeak(BaseEvaluator):
    """0 when the response text or the arguments of the tool calls it requests hold a credential (cloud and API
    keys, tokens, private keys, JWTs, passwords in URLs: detect-secrets' detectors), else 1; samples are masked."""

    name = "secret_leak"
    level = "llm"
    kind = "rule"
    detectors = Param(
        list(DEFAULT_DETECTORS),
        "credential kinds to look for (detect-secrets' plugins and pii_leak's key detectors); opt-in, as they match "
        "ordinary identifiers: artifactory, cloudant, ibm_cloud_iam, ibm_cos_hmac, softlayer",
        choices=list(SPECS),
        type=list,
    )
    max_chars = Param(200_000, "characters of each text scanned (its start)", min=100)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._scanner = SecretScanner(self._params["detectors"])

    def evaluate(self, call: LLMSpan) -> EvalResult:
        texts = [("response", text_of(call.response))]
        for tool_call in call.tool_calls or []:
            arguments = tool_call.arguments
            shown = arguments if isinstance(arguments, str) else canonical_arguments(arguments)
            texts.append((f"arguments of {tool_call.name or 'a tool call'}", shown or ""))
        texts = [(where, text) for where, text in texts if text.strip()]
        if not texts:
            return EvalResult.skip(SkipReason.NO_DATA, "no response text and no tool call arguments")
        found = [(where, f) for where, text in texts for f in self._scanner.scan(text[: self.max_chars])]
        if not found:
            scanned = sum(len(text) for _, text in texts)
            return EvalResult(1.0, explanation=f"no credentials found ({len(texts)} text(s), {scanned} chars)")
        counts: dict[str, int] = {}
        for _, finding in found:
            counts[finding.kind] = counts.get(finding.kind, 0) + 1
        samples = [f"{f.kind} {f.sample} in the {where}" for where, f in found]
        return EvalResult(
            0.0,
            explanation=f"{len(found)} credential(s) found: {listing(samples, 5, ', ')}",
            details={
                "counts": counts,
                "samples": [{"kind": f.kind, "sample": f.sample, "where": where} for where, f in found[:20]],
            },
            failure=_llm_failure(call, "secret", "found: " + ", ".join(sorted(counts))),
        )
