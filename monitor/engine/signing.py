"""Signer: the failure signature of a failing result (evaluators.signatures), where it is evaluated.

Computed once per failing result, in the worker that evaluated it (and in the main process for the judges'
verdicts), with the fingerprint rules of `signatures.rules`. The same failure repeats from trace to trace, so the
signatures of recent (evaluator, level, agent, failure, explanation) are remembered (`MAX_REMEMBERED`, then
forgotten all at once): a repeated failure costs a dictionary look-up, not a masking pass and a digest.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.sdk import EvalResult
from evaluators.signatures import FailureSignature, SignatureRule, failure_signature

MAX_REMEMBERED = 4096  # signatures remembered per process
MAX_KEY_CHARS = 2000  # explanations longer than this are not remembered (computed each time)


class Signer:
    """Callable: the signature of a result of `evaluator` at `level` (in `agent`), None unless it failed."""

    def __init__(self, rules: Sequence[SignatureRule] = ()) -> None:
        self.rules = tuple(rules)
        self._known: dict[tuple, FailureSignature] = {}

    def __call__(self, evaluator: str, level: str, agent: str | None, result: EvalResult) -> FailureSignature | None:
        if result.passed is not False or result.is_skipped:
            return None
        explanation = result.explanation or ""
        key = (evaluator, level, agent if level == "agent" else None, result.failure, explanation)
        known = self._known.get(key)
        if known is not None:
            return known
        signature = failure_signature(evaluator, level, agent, result.failure, explanation, self.rules)
        if len(explanation) <= MAX_KEY_CHARS:
            if len(self._known) >= MAX_REMEMBERED:
                self._known.clear()
            self._known[key] = signature
        return signature
