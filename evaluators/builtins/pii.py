"""The PII and secret detectors of `pii_leak`, kept importable here: they live in `evaluators.redaction`, which
the judges and the result store use too without importing the builtin evaluators."""

from evaluators.redaction import (
    PII_KINDS,
    Finding,
    find_pii,
    luhn_valid,
    mask_secret,
    redact_text,
    redact_texts,
)

__all__ = ["PII_KINDS", "Finding", "find_pii", "luhn_valid", "mask_secret", "redact_text", "redact_texts"]
