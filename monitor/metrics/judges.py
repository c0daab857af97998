"""The judges' own metrics: requests, tokens, spend, latency, budget and blocks per judge (the JudgeObserver of the
engine).

Label values are the judge's configured label and the judge model: both come from the config, never from a
trace, so they need no cap; a block's `reason` is one of Gemini's blockReason / finishReason names (anything else
is "OTHER", `evaluators.judges.safety`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)


class Pending(Protocol):
    """A stage holding judgements (`monitor.engine.judge_stage.JudgeStage`, the pairwise stage)."""

    @property
    def pending(self) -> int: ...


class Waiting(Protocol):
    """The judge engine (`evaluators.judges.engine.JudgeEngine`): its requests waiting for a limit."""

    @property
    def waiting(self) -> int: ...


class JudgeMetrics:
    """`agent_monitor_judge_*`; `request`, `budget`, `blocked` and `capacity_skip` are what
    `evaluators.judges.observing.JudgeObserver` calls; `agent_monitor_judge_pending` and `_waiting` read the stages
    and the engine at scrape time (`observe_pending`, `observe_waiting`); `limit_fallback` is told by the
    deployment-wide limits when they cannot be reached."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.requests = Counter(
            "agent_monitor_judge_requests",
            "Judge model requests by outcome (ok, invalid_output, cached, timeout, http_<code>, connection, ...).",
            ["judge", "model", "status"],
            registry=r,
        )
        self.tokens = Counter(
            "agent_monitor_judge_tokens", "Tokens spent by the judges.", ["judge", "model", "direction"], registry=r
        )
        self.cost = Counter(
            "agent_monitor_judge_cost_usd",
            "What the judges' requests cost in USD (their tokens priced like the agents' calls).",
            ["judge", "model"],
            registry=r,
        )
        self.unpriced = Counter(
            "agent_monitor_judge_unpriced_calls",
            "Judge requests that spent tokens on a model with no known price (not in the cost).",
            ["judge", "model"],
            registry=r,
        )
        self.latency = Histogram(
            "agent_monitor_judge_latency_seconds",
            "Time of one judge request, the client's own retries included.",
            ["judge", "model"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.budget_remaining = Gauge(
            "agent_monitor_judge_budget_remaining_tokens",
            "Tokens the judge may still spend today (UTC); +Inf without a budget.",
            ["judge"],
            registry=r,
        )
        self.blocks = Counter(
            "agent_monitor_judge_blocked",
            "Judge requests Gemini blocked (the prompt or the reply), by blockReason / finishReason.",
            ["judge", "model", "reason"],
            registry=r,
        )
        self._capacity_metrics(r)

    def _capacity_metrics(self, r: CollectorRegistry) -> None:
        """The judges' backlog and what it costs: pending and waiting judgements, capacity skips, fallbacks."""
        self.pending = Gauge(
            "agent_monitor_judge_pending", "Judgements waiting for or in flight to the judge model.", registry=r
        )
        self.waiting = Gauge(
            "agent_monitor_judge_waiting",
            "Judge requests waiting for the judges' concurrency or rate limits (the backlog the limits hold).",
            registry=r,
        )
        self.capacity_skips = Counter(
            "agent_monitor_judge_capacity_skips",
            "Judgements skipped for lack of capacity, by the setting that stopped them (limit: "
            "judges.requests_per_minute, judges.max_concurrency, judges.max_pending, judges.daily_token_budget, "
            "or a judge's own params.*).",
            ["judge", "limit"],
            registry=r,
        )
        self.resumed_judgements = Counter(
            "agent_monitor_judge_resumed",
            "Waiting judgements a start found kept in the result store (kind: judgement, pair_offer, session), by "
            "outcome: resumed (submitted again) or expired (older than judges.pending_max_age: skipped).",
            ["kind", "outcome"],
            registry=r,
        )
        self.limit_fallbacks = Counter(
            "agent_monitor_judge_limit_fallbacks",
            "Times this replica applied its own judge limits because the deployment-wide ones (PostgreSQL) could "
            "not be reached (kind: requests or tokens).",
            ["kind"],
            registry=r,
        )

    def observe_pending(self, stages: Sequence[Pending]) -> None:
        """Read the judgements `stages` hold at every scrape from now on (they change on the event loop thread,
        where /metrics is rendered)."""
        held = tuple(stages)
        self.pending.set_function(lambda: sum(stage.pending for stage in held))

    def observe_waiting(self, engine: Waiting) -> None:
        """Read the requests `engine` holds behind its limits at every scrape from now on."""
        self.waiting.set_function(lambda: engine.waiting)

    def capacity_skip(self, judge: str, limit: str) -> None:
        self.capacity_skips.labels(judge=judge, limit=limit).inc()

    def resumed(self, kind: str, outcome: str, count: int) -> None:
        self.resumed_judgements.labels(kind=kind, outcome=outcome).inc(count)

    def limit_fallback(self, kind: str) -> None:
        self.limit_fallbacks.labels(kind=kind).inc()

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
        self.requests.labels(judge=judge, model=model, status=status).inc()
        if cost_usd is None:
            if input_tokens > 0 or output_tokens > 0:
                self.unpriced.labels(judge=judge, model=model).inc()
        elif cost_usd > 0 and math.isfinite(cost_usd):
            self.cost.labels(judge=judge, model=model).inc(cost_usd)
        if status != "cached":
            self.latency.labels(judge=judge, model=model).observe(max(seconds, 0.0))
        if input_tokens > 0:
            self.tokens.labels(judge=judge, model=model, direction="input").inc(input_tokens)
        if output_tokens > 0:
            self.tokens.labels(judge=judge, model=model, direction="output").inc(output_tokens)

    def budget(self, judge: str, remaining_tokens: float) -> None:
        self.budget_remaining.labels(judge=judge).set(remaining_tokens if not math.isnan(remaining_tokens) else 0.0)

    def blocked(self, judge: str, model: str, reason: str) -> None:
        self.blocks.labels(judge=judge, model=model, reason=reason).inc()
