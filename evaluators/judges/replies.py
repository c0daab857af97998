"""What a judge client returns (JudgeReply) or raises (JudgeUnavailable); shared by the client and the engine."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """One model reply: its text (JSON for the response schema) and what it cost."""

    text: str
    input_tokens: int
    output_tokens: int
    model_version: str = ""
    finish_reason: str = ""


class JudgeUnavailable(Exception):
    """The judge model gave no usable reply after the client's own retries.

    `status` is short and fit for a metric label: "http_503", "timeout", "connection", "no_content", ...
    """

    def __init__(self, status: str, message: str) -> None:
        super().__init__(f"{status}: {message}" if message else status)
        self.status = status
        self.message = message

    def __reduce__(self) -> tuple[type[JudgeUnavailable], tuple[str, str]]:
        return (type(self), (self.status, self.message))  # picklable across processes


__all__ = ["JudgeReply", "JudgeUnavailable"]
