"""NormalizerErrors: the convention normalizers that raised, counted per convention in this process.

A normalizer bug must never take a trace down: the facet falls back to the next convention that has it (see
`conventions.first`), and a convention whose `detect` raises is left out for the span (`conventions.detect`).
It is never silent either: each call that raised is counted under its convention's name, and the first of each
(convention, facet, exception type) is logged with its traceback (a bounded number of lines however many spans
hit it). The daemon exports the counts as agent_monitor_normalizer_errors_total.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["NORMALIZER_ERRORS", "NormalizerErrors", "normalizer_errors"]

log = logging.getLogger("evaluators.traces.conventions")
MAX_LOGGED = 64  # distinct (convention, facet, exception type) logged at most, per process


class NormalizerErrors:
    """Per-convention counts of normalizer calls that raised (cumulative), and a drain for one exporter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._taken: dict[str, int] = {}
        self._logged: set[tuple[str, str, str]] = set()

    def record(self, convention: str, facet: str, exc: BaseException) -> None:
        """Count one normalizer call that raised `exc`; log it if it is the first of its kind."""
        key = (convention, facet, type(exc).__name__)
        with self._lock:
            self._counts[convention] = self._counts.get(convention, 0) + 1
            first = key not in self._logged and len(self._logged) < MAX_LOGGED
            if first:
                self._logged.add(key)
        if first:
            log.warning(
                "the %s normalizer raised on %s (the span is read from the other conventions; "
                "further errors of this kind are counted, not logged)",
                convention,
                "detection" if facet == "detect" else f"facet {facet}",
                exc_info=exc,
            )

    def counts(self) -> dict[str, int]:
        """Every convention's count since the process started."""
        with self._lock:
            return dict(self._counts)

    def take(self) -> dict[str, int]:
        """The counts added since the last `take()` (non-zero only): for the one reader that exports them."""
        with self._lock:
            new = {name: n - self._taken.get(name, 0) for name, n in self._counts.items()}
            self._taken = dict(self._counts)
        return {name: n for name, n in new.items() if n}


NORMALIZER_ERRORS = NormalizerErrors()


def normalizer_errors() -> dict[str, int]:
    """How many normalizer calls raised in this process, per convention name."""
    return NORMALIZER_ERRORS.counts()
