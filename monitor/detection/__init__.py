"""Drift detection: each agent's signals (`signals`) against its own baseline, read from the result store, tested
with scipy and exported as a `model.DriftReport` to the metrics, the rules and the Changes page.

The public modules are the ones `__all__` names. Importing the package imports none of its modules.
"""

__all__ = [
    "buckets", "describe", "detect", "episodes", "job", "model", "moments", "settings", "signals", "statistics",
    "windows",
]  # fmt: skip
