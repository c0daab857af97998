"""Failure signatures: failing results grouped by what failed (evaluator, level, agent, the failing step's kind and
name, the error type, the message with its variable parts masked), deterministic across processes, restarts and
replicas, with a versioned algorithm (`SIGNATURE_VERSION`)."""

from .compute import SignatureRule, failure_signature
from .masking import MAX_TEMPLATE_CHARS, mask_message
from .model import SIGNATURE_VERSION, STEP_KINDS, Failure, FailureSignature

__all__ = [
    "MAX_TEMPLATE_CHARS",
    "SIGNATURE_VERSION",
    "STEP_KINDS",
    "Failure",
    "FailureSignature",
    "SignatureRule",
    "failure_signature",
    "mask_message",
]
