"""Judging sessions: a Session and its judges → PreparedJudgements, sent like a trace's, then tied to the turns.

The daemon and `agent-monitor evaluate` send a session's judgements through the same judge stage as a trace's:

    for prepared in prepare_session(session, judges):          # CPU: the transcripts (or decided skips)
        if prepared.request is None:
            result = prepared.result
        else:
            result = await engine.judge(prepared.judge, prepared.request, name=label)
        result = place_turn(result, prepared.turn_trace_ids)  # the named turn's trace id, or no turn

`judge_session` does exactly that for every judge of one session. (`prepare_session` lives in `prepare`, beside
the trace's `prepare`, which also takes a Session.)
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Sequence

from ..sdk.result import EvalResult
from ..sessions.model import Session
from .base import JudgeCall, LLMJudge
from .failures import failing_turn
from .prepare import PreparedJudgement, prepare_session


def place_turn(result: EvalResult, turn_trace_ids: Sequence[str]) -> EvalResult:
    """`result` with the turn its verdict names tied to that turn's trace (`details["turn_trace_id"]`). A turn
    number outside the session (a judge model's mistake) is dropped, with the failure message that named it."""
    turn = failing_turn(result.details)
    if turn is None:
        return result
    if turn <= len(turn_trace_ids):
        return dataclasses.replace(result, details={**result.details, "turn_trace_id": turn_trace_ids[turn - 1]})
    details = {k: v for k, v in result.details.items() if k != "turn"}
    failure = result.failure
    if failure is not None and failure.message == f"turn {turn}":
        failure = dataclasses.replace(failure, message=None)
    return dataclasses.replace(result, details=details, failure=failure)


async def judge_session(
    session: Session, judges: Iterable[tuple[LLMJudge, str]], judge_call: JudgeCall
) -> list[tuple[str, EvalResult]]:
    """Every session-level judge of `judges` ((judge, label) pairs) over `session`, sent together through
    `judge_call` (`JudgeEngine.judge`, whose limits apply): each label with its result, turns placed, in judge
    order."""
    chosen = list(judges)
    label_of = {id(judge): label for judge, label in chosen}

    async def one(prepared: PreparedJudgement) -> tuple[str, EvalResult]:
        label = label_of[id(prepared.judge)]
        if prepared.request is None:
            assert prepared.result is not None
            return label, place_turn(prepared.result, prepared.turn_trace_ids)
        result = await judge_call(prepared.judge, prepared.request, name=label)
        return label, place_turn(result, prepared.turn_trace_ids)

    prepared = list(prepare_session(session, [judge for judge, _ in chosen]))
    return list(await asyncio.gather(*(one(p) for p in prepared)))


__all__ = ["judge_session", "place_turn", "prepare_session"]
