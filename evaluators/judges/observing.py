"""What the judge engine tells about its work (`JudgeObserver`, for metrics), and a wrapper that keeps an
observer's failure out of the judgements (`GuardedObserver`)."""

from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger(__name__)


class JudgeObserver(Protocol):
    """Told about every request and every spend (for metrics)."""

    def request(
        self,
        judge: str,
        model: str,
        status: str,
        seconds: float,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None = 0.0,
    ) -> None:
        """One request: status "ok", "invalid_output", a JudgeUnavailable status, "timeout", "cancelled",
        "error" (the client raised something else), or "cached" (no request: 0 seconds, 0 tokens). `cost_usd`:
        what its tokens cost (0 without tokens); None when they have no known price (the model is unpriced)."""

    def budget(self, judge: str, remaining_tokens: float) -> None:
        """Tokens `judge` may still spend today (the lower of its own and the global budget; math.inf: no limit)."""

    def blocked(self, judge: str, model: str, reason: str) -> None:
        """Gemini blocked a request of `judge` (its request status is "blocked"): `reason` is the blockReason or
        finishReason ("SAFETY", "PROHIBITED_CONTENT", ...)."""

    def capacity_skip(self, judge: str, limit: str) -> None:
        """A judgement of `judge` skipped for lack of capacity: `limit` is the setting that stopped it (a rate or
        concurrency limit it waited for past `judgement_timeout`, or a spent daily token budget)."""


class GuardedObserver:
    """Forwards to `observer` (None: nowhere); an exception it raises is logged, never raised to the engine."""

    __slots__ = ("observer",)

    def __init__(self, observer: JudgeObserver | None) -> None:
        self.observer = observer

    def request(
        self,
        judge: str,
        model: str,
        status: str,
        seconds: float,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None = 0.0,
    ) -> None:
        self._call("request", judge, model, status, max(0.0, seconds), input_tokens, output_tokens, cost_usd)

    def budget(self, judge: str, remaining_tokens: float) -> None:
        self._call("budget", judge, remaining_tokens)

    def blocked(self, judge: str, model: str, reason: str) -> None:
        self._call("blocked", judge, model, reason)

    def capacity_skip(self, judge: str, limit: str | None) -> None:
        """`limit` None: the judgement was not stopped by a limit (nothing to tell)."""
        if limit is not None:
            self._call("capacity_skip", judge, limit)

    def _call(self, method: str, *args: object) -> None:
        if self.observer is None:
            return
        try:
            getattr(self.observer, method)(*args)
        except Exception:
            log.warning("judge observer failed on %s()", method, exc_info=True)
