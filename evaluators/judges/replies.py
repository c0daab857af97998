"""What a judge client returns (JudgeReply) or raises (JudgeUnavailable); shared by the client and the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """One model reply: its text (JSON for the response schema) and what it cost."""

    text: str
    input_tokens: int
    output_tokens: int
    model_version: str = ""
    finish_reason: str = ""


class JudgeUnavailable(Exception):
    """The judge model gave no usable answer after the client's own retries.

    `status` is a short word safe for a metric label: "http_429", "http_503", "http_400", ..., "timeout",
    "connection", "no_content" (no candidate text, e.g. a safety block), "bad_response" (a reply that is not
    the API's JSON), "auth" (Vertex AI credentials), "redirect" (a 3xx answer: redirects are never followed).
    `input_tokens`/`output_tokens` are what a reply without content still cost (0 when nothing came back).
    """

    def __init__(self, status: str, message: str, *, input_tokens: int = 0, output_tokens: int = 0) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    def __str__(self) -> str:
        return f"{self.status}: {self.message}" if self.message else self.status

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_unavailable, (self.status, self.message, self.input_tokens, self.output_tokens))


def _rebuild_unavailable(status: str, message: str, input_tokens: int, output_tokens: int) -> JudgeUnavailable:
    return JudgeUnavailable(status, message, input_tokens=input_tokens, output_tokens=output_tokens)


__all__ = ["JudgeReply", "JudgeUnavailable"]
