"""The signature of a failing result (version v2): what failed, not the text around it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..linear_regex import compile_linear
from .masking import mask_message
from .model import SIGNATURE_VERSION, Failure, FailureSignature

MAX_EXAMPLE_CHARS = 500
MAX_NAME_CHARS = 128
_SEPARATOR = "\x1f"
_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL  # the flags RE2 takes (re.UNICODE is implied)


@dataclass(frozen=True)
class SignatureRule:
    """A fingerprint rule (Sentry's, in spirit): a failure whose fields all match gets the fixed `name` as its
    template, so that failures it matches group together (merge) or apart from the rest (split). `None` matches
    anything; `message` is a regular expression searched in the unmasked message, run by the linear-time engine
    (RE2; a string or an `re.Pattern` is compiled by it: a config pattern must not stall a worker)."""

    name: str
    evaluator: str | None = None
    step_name: str | None = None
    error_type: str | None = None
    message: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.message, re.Pattern):
            object.__setattr__(self, "message", compile_linear(self.message.pattern, self.message.flags & _FLAGS))
        elif isinstance(self.message, str):
            object.__setattr__(self, "message", compile_linear(self.message))

    def matches(self, evaluator: str, failure: Failure, message: str) -> bool:
        return (
            (self.evaluator is None or self.evaluator == evaluator)
            and (self.step_name is None or self.step_name == (failure.step_name or ""))
            and (self.error_type is None or self.error_type == (failure.error_type or ""))
            and (self.message is None or self.message.search(message) is not None)
        )


def _name(value: str | None) -> str:
    return " ".join((value or "").split())[:MAX_NAME_CHARS]


def failure_signature(
    evaluator: str,
    level: str,
    agent: str | None,
    failure: Failure | None,
    explanation: str = "",
    rules: Sequence[SignatureRule] = (),
) -> FailureSignature:
    """The signature of one failing result of `evaluator` at `level` (in `agent`, at agent level): from the
    evaluator's `failure` when it states one (its message, else nothing of the explanation), else from the masked
    explanation; the first matching rule's name replaces the template."""
    stated = failure is not None
    failure = failure or Failure()
    message = failure.message if stated else explanation
    message = message or ""
    template = next((rule.name for rule in rules if rule.matches(evaluator, failure, message)), None)
    if template is None:
        template = mask_message(message)
    fields = (
        SIGNATURE_VERSION,
        _name(evaluator),
        _name(level),
        _name(agent) if level == "agent" else "",
        _name(failure.step_kind),
        _name(failure.step_name),
        _name(failure.error_type),
        template,
    )
    digest = hashlib.sha256(_SEPARATOR.join(fields).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    example = " ".join(message.split())[:MAX_EXAMPLE_CHARS]
    return FailureSignature(digest, *fields, example)
