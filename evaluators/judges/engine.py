"""JudgeEngine: sends JudgeRequests to the judge model under the engine's and each judge's limits.

One judgement: no client → skip; redact the prompt; reply cache; daily token budgets; then `num_samples`
requests, each through the judge's own concurrency and rate limits and then the global ones (gates.py; every HTTP
attempt takes its rate tokens, the client's retries included), each reply
validated against the judge's response schema (asked again once when it does not validate), and the
samples combined by the judge's vote. The whole judgement is bounded by `judgement_timeout`. A failure
of the model or of the judge is a skip, never an exception (cancellation still propagates). A judgement that
times out while it waits for a concurrency or rate limit is a `rate_limited` skip (the limits cannot keep up),
one that finds a budget spent a `budget_exhausted` skip; both are told to the observer's `capacity_skip` with
the setting that stopped it. The limiters and budgets come from `limits` (limits.py): this process's own by
default, or shared by every replica of a deployment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from pydantic import BaseModel, ValidationError

from ..pricing import ModelPrice, warm
from ..redaction import redact_text
from ..sdk.result import EvalResult, SkipReason
from .base import JudgeRequest, LLMJudge
from .control import ReplyCache
from .gates import GLOBAL_BUDGET, JUDGE_BUDGET, Gates, OwnLimits, RetryTokens, Waiter
from .limits import JudgeLimits, LocalLimits, RequestLimit
from .observing import GuardedObserver, JudgeObserver
from .replies import JudgeReply, JudgeUnavailable
from .settings import JudgeSettings
from .spend import PROVIDER, price_reply

log = logging.getLogger(__name__)

NO_CLIENT = "no judge model configured: set GEMINI_API_KEY (or judges.gemini_api_key) or judges.vertex_project"
RETRY_NOTE = "Your previous reply did not validate: {error}; answer again with JSON only."


class GenerateClient(Protocol):
    """What the engine needs of a judge client (`client.JudgeClient`); its retries are its own, but it awaits
    `before_attempt` before every HTTP attempt (where the engine takes the rate tokens of the retries)."""

    async def generate(
        self,
        *,
        model: str,
        system: str,
        prompt: str,
        response_schema: type[BaseModel],
        before_attempt: Callable[[], Awaitable[None]] | None = None,
    ) -> JudgeReply: ...

    async def aclose(self) -> None: ...


@dataclass(slots=True)
class _Judgement:
    """The state of one judgement: what it sends and what it has spent (and, as a `Waiter`, the limit it was
    waiting for when it timed out)."""

    judge: LLMJudge
    name: str
    model: str
    request: JudgeRequest
    limits: OwnLimits
    waiter: Waiter = field(default_factory=Waiter)
    deadline: asyncio.Timeout | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    stopped_by: str | None = None  # the budget that made it a budget_exhausted skip


class JudgeEngine:
    """Runs judgements on the event loop; one per daemon (or offline run), shared by every judge.

    `client` None (no key) makes every judgement a `judge_unavailable` skip. `clock` (epoch seconds) decides
    the UTC day of the budgets and the date of the prices; `monotonic` and `sleep` drive the rate limiters and
    the observed durations. Each request's tokens are priced as Google's (`evaluators.pricing.price_call`),
    `prices` (the `pricing.models` overrides) winning over the price table. `limits`: where the rate limiters
    and budgets come from (default: this process's own, `LocalLimits`).
    """

    def __init__(
        self,
        settings: JudgeSettings,
        client: GenerateClient | None,
        observer: JudgeObserver | None = None,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        prices: Mapping[str, ModelPrice] | None = None,
        limits: JudgeLimits | None = None,
    ) -> None:
        self.settings = settings
        self.prices = dict(prices or {})
        warm([settings.model], PROVIDER)  # the table loaded here, not at the first reply on the event loop
        self._client = client
        self._observer = GuardedObserver(observer)
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._limits = limits if limits is not None else LocalLimits()
        self._gates = Gates(settings.max_concurrency, self._rate_limiter("requests", settings.requests_per_minute))
        self._budget = self._limits.token_budget("tokens", settings.daily_token_budget, clock=clock)
        self.cache = ReplyCache(settings.cache_size)
        self._judges: dict[str, OwnLimits] = {}
        self._budget_logged: dict[str, int] = {}  # judge → the UTC day its spent budget was logged
        self._in_flight = 0
        self._active = 0
        self._closed = False

    @property
    def in_flight(self) -> int:
        """Requests at the client right now."""
        return self._in_flight

    @property
    def active(self) -> int:
        """Judgements under way: waiting for a limit or for their replies."""
        return self._active

    @property
    def waiting(self) -> int:
        """Requests waiting for a concurrency or rate limit right now (the judges' backlog)."""
        return self._gates.waiting

    def remaining_tokens(self, name: str | None = None) -> float:
        """Tokens left today globally, or for judge `name` (the lower of both); math.inf when unlimited."""
        limits = self._judges.get(name) if name is not None else None
        remaining = self._budget.remaining()
        return min(remaining, limits.budget.remaining()) if limits is not None else remaining

    async def judge(self, judge: LLMJudge, request: JudgeRequest, *, name: str | None = None) -> EvalResult:
        """The result of one judgement (`name`: the metric label, default the judge's name)."""
        name = name or judge.name
        model = request.model or self.settings.model
        if self._client is None or not self.settings.enabled or self._closed:
            why = "the judge engine is closed" if self._closed and self._client is not None else NO_CLIENT
            return _with_cost(EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, f"{name}: {why}"), model)
        if self.settings.redact:
            request = dataclasses.replace(request, prompt=redact_text(request.prompt))
        key = request.content_key(model)
        cached = self.cache.get(key)
        if cached is not None:
            self._observer.request(name, model, "cached", 0.0, 0, 0)
            return _with_cost(judge.stated(cached.resolve(judge.threshold)), model, cached=True)
        limits = self._limits_for(judge, name)
        job = _Judgement(judge, name, model, request, limits)
        spent = await self._budget_skip(job)
        if spent is not None:
            self._observer.capacity_skip(name, job.stopped_by)
            return _with_cost(spent, model)
        timeout = self.settings.judgement_timeout
        self._active += 1
        try:
            async with asyncio.timeout(timeout) as deadline:
                job.deadline = deadline
                result = await self._run(job)
        except TimeoutError:
            limit = job.waiter.waited_for
            if limit is None:
                result = EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, f"{name}: timed out after {timeout:g} s")
            else:
                self._observer.capacity_skip(name, limit)
                message = f"{name}: timed out after {timeout:g} s waiting for {limit}: the judges cannot keep up"
                result = EvalResult.skip(SkipReason.RATE_LIMITED, message)
        finally:
            self._active -= 1
        if result.skip_reason is SkipReason.BUDGET_EXHAUSTED:
            self._observer.capacity_skip(name, job.stopped_by)
        if not result.is_skipped:
            self.cache.put(key, result)
        return _with_cost(judge.stated(result), model, job.input_tokens, job.output_tokens)

    async def aclose(self) -> None:
        """Close the client; later judgements are `judge_unavailable` skips."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._client is not None:
                await self._client.aclose()
        finally:
            await self._limits.aclose()

    # --- limits ----------------------------------------------------------------------------------
    def _rate_limiter(self, scope: str, per_minute: int) -> RequestLimit:
        return self._limits.rate_limiter(
            scope, per_minute, clock=self._clock, monotonic=self._monotonic, sleep=self._sleep
        )

    def _limits_for(self, judge: LLMJudge, name: str) -> OwnLimits:
        params = (int(judge.max_concurrency), int(judge.requests_per_minute), int(judge.daily_token_budget))
        limits = self._judges.get(name)
        if limits is not None and limits.params == params:
            return limits
        concurrency, per_minute, per_day = params
        if limits is not None:  # reconfigured: new limits, but today's spending still counts
            budget = limits.budget
            budget.per_day = per_day
        else:
            budget = self._limits.token_budget(f"tokens:{name}", per_day, clock=self._clock)
        limits = OwnLimits(
            params,
            asyncio.Semaphore(concurrency) if concurrency > 0 else None,
            self._rate_limiter(f"requests:{name}", per_minute),
            budget,
        )
        self._judges[name] = limits
        return limits

    async def _budget_skip(self, job: _Judgement) -> EvalResult | None:
        """A `budget_exhausted` skip when the global or the judge's budget is spent (logged once a UTC day)."""
        name = job.name
        for which, budget, setting in (
            ("global", self._budget, GLOBAL_BUDGET),
            ("judge's own", job.limits.budget, JUDGE_BUDGET),
        ):
            await budget.refresh()
            if not budget.exhausted():
                continue
            job.stopped_by = setting
            day = budget.day()
            message = f"{name}: the {which} daily token budget ({budget.per_day} tokens) is spent until 00:00 UTC"
            if self._budget_logged.get(name) != day:
                self._budget_logged[name] = day
                log.warning("judge %s skips its judgements: %s", name, message)
            return EvalResult.skip(SkipReason.BUDGET_EXHAUSTED, message)
        return None

    # --- requests --------------------------------------------------------------------------------
    async def _run(self, job: _Judgement) -> EvalResult:
        samples = max(1, job.request.num_samples)
        if samples == 1:
            return await self._sample(job)
        results = list(await asyncio.gather(*(self._sample(job) for _ in range(samples))))
        try:
            return job.judge.vote(results).resolve(job.judge.threshold)
        except Exception as exc:
            return _judge_error(job, "vote", exc)

    async def _sample(self, job: _Judgement) -> EvalResult:
        """One sample: a request, asked again once with the validation error when the reply does not validate."""
        reply = await self._attempt(job, job.request.prompt)
        if isinstance(reply, str):
            retry = f"{job.request.prompt}\n\n{RETRY_NOTE.format(error=reply)}"
            reply = await self._attempt(job, retry)
            if isinstance(reply, str):
                message = f"{job.name}: the judge model's reply was invalid twice: {reply}"
                return EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, message[:500])
        if isinstance(reply, EvalResult):
            return reply
        try:
            return job.judge.to_result(reply).resolve(job.judge.threshold)
        except Exception as exc:
            return _judge_error(job, "to_result", exc)

    async def _attempt(self, job: _Judgement, prompt: str) -> BaseModel | str | EvalResult:
        """One request: the validated reply, the validation error (a string), or a `judge_unavailable` skip."""
        assert self._client is not None  # judge() returns early without a client
        schema = job.judge.response_schema
        async with self._gates.slot(job.limits, job.waiter):
            # Checked again with a slot in hand: judgements queued behind the limits would otherwise all pass the
            # first check together. What is in flight (at most max_concurrency requests) may still overshoot.
            spent = await self._budget_skip(job)
            if spent is not None:
                return spent
            started = self._monotonic()
            self._in_flight += 1
            try:
                reply = await self._client.generate(
                    model=job.model,
                    system=job.request.system,
                    prompt=prompt,
                    response_schema=schema,
                    before_attempt=RetryTokens(self._gates, job.limits),
                )
            except JudgeUnavailable as exc:  # a reply without content may still have cost tokens
                cost = exc.spent()
                seconds = self._monotonic() - started
                self._observer.request(
                    job.name, job.model, exc.status, seconds, *cost_of(cost), self._price(job.model, cost)
                )
                if exc.input_tokens or exc.output_tokens:
                    await self._spend(job, cost)
                if exc.block_reason:
                    self._observer.blocked(job.name, job.model, exc.block_reason)
                return _unavailable(job.name, exc)
            except asyncio.CancelledError:
                status = "timeout" if job.deadline is not None and job.deadline.expired() else "cancelled"
                self._observer.request(job.name, job.model, status, self._monotonic() - started, 0, 0)
                raise
            except Exception as exc:
                log.warning("judge %s: the client raised %r", job.name, exc, exc_info=True)
                self._observer.request(job.name, job.model, "error", self._monotonic() - started, 0, 0)
                message = f"{job.name}: the judge client failed: {type(exc).__name__}: {exc}"
                return EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, message[:500])
            finally:
                self._in_flight -= 1
        seconds = self._monotonic() - started
        parsed = _parse(schema, reply.text)
        status = "ok" if isinstance(parsed, BaseModel) else "invalid_output"
        usd = self._price(job.model, reply)
        self._observer.request(job.name, job.model, status, seconds, reply.input_tokens, reply.output_tokens, usd)
        await self._spend(job, reply)
        return parsed

    async def _spend(self, job: _Judgement, reply: JudgeReply) -> None:
        job.input_tokens += max(0, reply.input_tokens)
        job.output_tokens += max(0, reply.output_tokens)
        tokens = max(0, reply.input_tokens) + max(0, reply.output_tokens)
        await self._budget.record(tokens)
        await job.limits.budget.record(tokens)
        if self._observer.observer is not None:
            self._observer.budget(job.name, min(self._budget.remaining(), job.limits.budget.remaining()))

    def _price(self, model: str, reply: JudgeReply) -> float | None:
        return price_reply(model, reply, datetime.fromtimestamp(self._clock(), UTC), self.prices)


def _parse(schema: type[BaseModel], text: str) -> BaseModel | str:
    """The reply validated against `schema`, or a short description of why it does not validate."""
    body = text.strip()
    if body.startswith("```"):  # a fenced block despite the JSON-only rule
        body = body.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        return schema.model_validate_json(body)
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc'])) or '(reply)'}: {e['msg']}" for e in exc.errors()[:5]]
        return "; ".join(problems)[:400] or "not valid JSON for the schema"


def _unavailable(name: str, exc: JudgeUnavailable) -> EvalResult:
    """The skip of a request the judge model did not answer: blocked by Gemini, or unavailable."""
    if exc.block_reason:
        message = f"{name}: blocked by Gemini ({exc.block_reason}): {exc.message}"
        return EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, message[:500], {"blocked": exc.block_reason})
    message = f"{name}: the judge model is unavailable ({exc.status}): {exc.message}"
    return EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, message[:500])


def _judge_error(job: _Judgement, step: str, exc: Exception) -> EvalResult:
    log.warning("judge %s: %s raised %r", job.name, step, exc, exc_info=True)
    return EvalResult.skip(SkipReason.ERROR, f"{job.name}: {step} failed: {type(exc).__name__}: {exc}"[:500])


def _with_cost(
    result: EvalResult, model: str, tokens_in: int = 0, tokens_out: int = 0, *, cached: bool = False
) -> EvalResult:
    details = {**result.details, "judge_model": model, "input_tokens": tokens_in, "output_tokens": tokens_out}
    if cached:
        details["cached"] = True
    return dataclasses.replace(result, details=details)


__all__ = ["GenerateClient", "JudgeEngine", "JudgeObserver", "redact_text"]


def cost_of(reply: JudgeReply) -> tuple[int, int]:
    return max(0, reply.input_tokens), max(0, reply.output_tokens)
