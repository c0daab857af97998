"""An evaluator as the daemon runs it: its metric label, sampling rate and the config entry it came from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from evaluators.sdk import EvaluationRecord


@dataclass(slots=True)
class ConfiguredEvaluator:
    """An evaluator instance with its daemon-side settings."""

    evaluator: Any
    label: str  # the `evaluator` metric label
    sampling: float = 1.0
    entry: Any = None  # the config entry it came from (None for the default set)


def sampled_in(trace_id: str, evaluator_label: str, rate: float) -> bool:
    """Deterministic by trace id, so every replica and every re-run makes the same choice for a trace."""
    if rate >= 1.0:
        return True
    digest = hashlib.blake2b(f"{evaluator_label}:{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


def relabel(record: EvaluationRecord, label: str) -> EvaluationRecord:
    """The record under the configured `evaluator` label (an entry's `id` may differ from the name)."""
    return record if record.evaluator == label else record.model_copy(update={"evaluator": label})
