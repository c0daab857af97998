"""A stub judge client (no network), a minimal judge and a recording observer for the judge engine tests."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from evaluators.judges.base import LLMJudge
from evaluators.judges.replies import JudgeReply, JudgeUnavailable

Script = JudgeReply | BaseException | Callable[[str], JudgeReply]


def verdict(score: float, input_tokens: int = 10, output_tokens: int = 5, verdict: str = "") -> JudgeReply:
    """A valid JudgeVerdict reply."""
    label = verdict or ("pass" if score >= 0.5 else "fail")
    text = json.dumps({"score": score, "verdict": label, "explanation": f"scored {score}"})
    return JudgeReply(text, input_tokens, output_tokens, model_version="stub-001", finish_reason="STOP")


def garbage(text: str = "not json at all", input_tokens: int = 10, output_tokens: int = 5) -> JudgeReply:
    return JudgeReply(text, input_tokens, output_tokens)


@dataclass
class Call:
    model: str
    system: str
    prompt: str
    schema: type[BaseModel]
    at: float = 0.0  # the stub's clock when the call came


@dataclass
class StubClient:
    """Returns the scripted replies in order (then `default`), raising the scripted exceptions.

    Counts calls and requests in flight (overall and by system instruction, i.e. by judge); `delay`
    seconds of asyncio.sleep per call; a call cancelled during it takes `abort_delay` more seconds to give up (a
    client closing its connection), holding its slot; `clock` (optional) stamps each call.
    """

    script: list[Script] = field(default_factory=list)
    default: Script | None = None
    delay: float = 0.0
    abort_delay: float = 0.0
    calls: list[Call] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    by_system: Counter[str] = field(default_factory=Counter)
    max_by_system: Counter[str] = field(default_factory=Counter)
    closed: bool = False
    clock: Callable[[], float] | None = None

    async def generate(
        self,
        *,
        model: str,
        system: str,
        prompt: str,
        response_schema: type[BaseModel],
        before_attempt: Callable[[], Awaitable[None]] | None = None,
    ) -> JudgeReply:
        if before_attempt is not None:  # one attempt: the engine took its tokens already
            await before_attempt()
        at = self.clock() if self.clock is not None else 0.0
        self.calls.append(Call(model, system, prompt, response_schema, at))
        step = self.script.pop(0) if self.script else self.default
        if step is None:
            step = verdict(1.0)
        self.in_flight += 1
        self.by_system[system] += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.max_by_system[system] = max(self.max_by_system[system], self.by_system[system])
        try:
            if self.delay:
                await self._sleep(self.delay)
            else:
                await asyncio.sleep(0)
            if isinstance(step, BaseException):
                raise step
            return step(prompt) if callable(step) else step
        finally:
            self.in_flight -= 1
            self.by_system[system] -= 1

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            if self.abort_delay:
                await asyncio.shield(asyncio.sleep(self.abort_delay))
            raise

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class RecordingObserver:
    requests: list[tuple[str, str, str, float, int, int]] = field(default_factory=list)
    costs: list[float | None] = field(default_factory=list)  # each request's cost_usd
    budgets: list[tuple[str, float]] = field(default_factory=list)
    blocks: list[tuple[str, str, str]] = field(default_factory=list)
    capacity: list[tuple[str, str]] = field(default_factory=list)  # (judge, limit) of each capacity skip

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
        self.requests.append((judge, model, status, seconds, input_tokens, output_tokens))
        self.costs.append(cost_usd)

    def budget(self, judge: str, remaining_tokens: float) -> None:
        self.budgets.append((judge, remaining_tokens))

    def blocked(self, judge: str, model: str, reason: str) -> None:
        self.blocks.append((judge, model, reason))

    def capacity_skip(self, judge: str, limit: str) -> None:
        self.capacity.append((judge, limit))

    @property
    def statuses(self) -> list[str]:
        return [r[2] for r in self.requests]


class AnswerJudge(LLMJudge):
    """Scores an answer (test judge)."""

    name = "answer_judge"
    level = "trace"
    instructions = "Score the answer."

    def build_prompt(self, subject: Any, task: Any = None) -> str:
        return f'<data name="answer">{subject}</data>\nIs the answer good?'


class OtherJudge(AnswerJudge):
    """Another judge, told apart by its instructions."""

    name = "other_judge"
    instructions = "Score the other thing."


__all__ = ["AnswerJudge", "JudgeUnavailable", "OtherJudge", "RecordingObserver", "StubClient", "garbage", "verdict"]
