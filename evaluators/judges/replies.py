"""What a judge client returns (JudgeReply) or raises (JudgeUnavailable); shared by the client and the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..traces.conventions.base import TokenUsage


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """One model reply: its text (JSON for the response schema) and what it cost. Like `TokenUsage`,
    `input_tokens` include the `cache_read_tokens` (Gemini's cached content) and `output_tokens` the
    `reasoning_tokens` (Gemini's thoughts)."""

    text: str
    input_tokens: int
    output_tokens: int
    model_version: str = ""
    finish_reason: str = ""
    cache_read_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def usage(self) -> TokenUsage:
        return usage_of(self.input_tokens, self.output_tokens, self.cache_read_tokens, self.reasoning_tokens)


class JudgeUnavailable(Exception):
    """The judge model gave no usable answer after the client's own retries.

    `status` is a short word safe for a metric label: "http_429", "http_503", "http_400", ..., "timeout",
    "connection", "blocked" (Gemini blocked the prompt or the reply: `block_reason` says why, e.g. "SAFETY",
    "PROHIBITED_CONTENT"), "no_content" (a candidate without text, not blocked), "bad_response" (a reply that is
    not the API's JSON), "auth" (Vertex AI credentials), "redirect" (a 3xx answer: redirects are never followed).
    `input_tokens`/`output_tokens` (with their `cache_read_tokens`/`reasoning_tokens` parts) are what a reply
    without content still cost (0 when nothing came back).
    """

    def __init__(
        self,
        status: str,
        message: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        reasoning_tokens: int = 0,
        block_reason: str = "",
    ) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message
        self.block_reason = block_reason
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cache_read_tokens = cache_read_tokens
        self.reasoning_tokens = reasoning_tokens

    def spent(self) -> JudgeReply:
        """What the failed request cost, as a reply without text."""
        return JudgeReply(
            "",
            self.input_tokens,
            self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            reasoning_tokens=self.reasoning_tokens,
        )

    def __str__(self) -> str:
        return f"{self.status}: {self.message}" if self.message else self.status

    def __reduce__(self) -> tuple[Any, ...]:
        tokens = (self.input_tokens, self.output_tokens, self.cache_read_tokens, self.reasoning_tokens)
        return (_rebuild_unavailable, (self.status, self.message, *tokens, self.block_reason))


def _rebuild_unavailable(
    status: str,
    message: str,
    input_tokens: int,
    output_tokens: int,
    cache_read: int = 0,
    reasoning: int = 0,
    block_reason: str = "",
) -> JudgeUnavailable:
    return JudgeUnavailable(
        status,
        message,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        reasoning_tokens=reasoning,
        block_reason=block_reason,
    )


def usage_of(input_tokens: int, output_tokens: int, cache_read: int, reasoning: int) -> TokenUsage:
    """A reply's tokens as a TokenUsage (what `evaluators.pricing` prices)."""
    total_in, total_out = max(input_tokens, 0), max(output_tokens, 0)
    return TokenUsage(
        input_tokens=total_in,
        output_tokens=total_out,
        total_tokens=total_in + total_out,
        cache_read_tokens=min(max(cache_read, 0), total_in),
        reasoning_tokens=min(max(reasoning, 0), total_out),
    )


__all__ = ["JudgeReply", "JudgeUnavailable", "usage_of"]
