"""What a failure is: the hint an evaluator states (`Failure`) and the signature computed from it."""

from __future__ import annotations

from dataclasses import dataclass

SIGNATURE_VERSION = "v2"
STEP_KINDS = ("tool", "llm", "agent", "retriever", "trace", "session")


@dataclass(frozen=True, slots=True)
class Failure:
    """What failed, as an evaluator states it on a failing `EvalResult(failure=...)`: the step (`step_kind`: tool,
    llm, agent, retriever, trace or session; `step_name`: the tool, agent or retriever name, an LLM call's provider,
    never its model, so that a model switch is not a new failure mode), the error's type (an exception type,
    `http_503`, a finish reason, a judge's category) and a short message (masked before it is grouped on: ids,
    numbers, addresses and timestamps in it do not split a group). Every field is optional; leave out what varies
    from one occurrence of the same failure to the next."""

    step_kind: str | None = None
    step_name: str | None = None
    error_type: str | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        for name in ("step_kind", "step_name", "error_type", "message"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Failure.{name} must be a str or None, got {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class FailureSignature:
    """One failure mode: `id` is a digest of `version` and every field but `example`, the same in every process,
    replica and restart."""

    id: str
    version: str
    evaluator: str
    level: str
    agent: str
    step_kind: str
    step_name: str
    error_type: str
    template: str  # the masked message, or the name a signature rule gave
    example: str  # one concrete message (bounded), for the reader; not part of the identity
