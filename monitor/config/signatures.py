"""The `signatures` config section: how failing results are grouped into failure signatures, when a signature is
new, active or resolved, and the fingerprint rules that merge or split groups."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from evaluators.linear_regex import compile_linear
from evaluators.signatures import SignatureRule

from .units import Duration, Section


class SignatureRuleConfig(Section):
    """One fingerprint rule: a failure matching every given field is grouped under `name` (the first matching rule
    wins). `message`: a regular expression (RE2 syntax: linear time, so no lookarounds or backreferences) searched
    in the failure's message, before masking."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    evaluator: str | None = None
    step_name: str | None = None
    error_type: str | None = None
    message: str | None = None

    @field_validator("message")
    @classmethod
    def _regex(cls, message: str | None) -> str | None:
        if message is None:
            return None
        try:
            compile_linear(message)
        except re.error as exc:
            raise ValueError(f"is not a valid regular expression: {exc}") from None
        return message

    def rule(self) -> SignatureRule:
        pattern = compile_linear(self.message) if self.message is not None else None
        return SignatureRule(self.name, self.evaluator, self.step_name, self.error_type, pattern)


class SignaturesConfig(Section):
    """`window`: a signature first seen within it that reaches `min_count` results counts as new
    (agent_eval_failure_signatures_new_total, the AgentEvalNewFailureSignature alert), and a signature seen within
    it is active (agent_eval_failure_signatures_active). `resolve_after`: a signature not seen for this long is
    resolved; seen again, it has regressed. `rules`: fingerprint rules, in order."""

    window: Duration = 3600.0
    min_count: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    resolve_after: Duration = 86400.0
    rules: Annotated[list[SignatureRuleConfig], Field(max_length=1000)] = Field(default_factory=list)

    def compiled_rules(self) -> tuple[SignatureRule, ...]:
        return tuple(entry.rule() for entry in self.rules)
