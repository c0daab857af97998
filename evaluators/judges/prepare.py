"""prepare: a trace and its judges → one PreparedJudgement per (judge, dispatch unit), in judge order.

A `Session` given instead of a trace gets its session-level judges' judgements (`prepare_session`);
a trace never gets those (session judges have no dispatch unit in a trace).

The CPU half of judging (views and prompts), done where the views are. A judgement is either a request
for the engine or, when there is nothing to send, its final result already (a skip: no data, needs
ground truth, the views failed).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..sdk.result import EvalResult, SkipReason
from ..sdk.runner import dispatch_units
from ..sessions.model import Session
from .base import JudgeRequest, LLMJudge

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PreparedJudgement:
    """One judge on one subject: `request` to send, or `result` when it is already decided (never both)."""

    judge: LLMJudge
    level: str
    span_id: str | None
    agent_name: str | None
    model: str | None  # the model of the judged LLM call or agent (not the judge's)
    request: JudgeRequest | None
    result: EvalResult | None
    turn_trace_ids: tuple[str, ...] = ()  # a session's turns' trace ids, in order (for `place_turn`)


def prepare(
    trace: Any, judges: Iterable[LLMJudge], mode: str = "monitor", task: Any = None
) -> Iterator[PreparedJudgement]:
    """Every judge at its level over `trace` (see `evaluators.sdk.dispatch`); a judge that raises while
    building its prompt gets an `error` skip, the others go on. `trace` may be a `Session`: then its
    session-level judges, once each (`prepare_session`)."""
    if isinstance(trace, Session):
        yield from prepare_session(trace, judges)
        return
    units: dict[str, list[tuple[Any, str | None, str | None, str | None]]] = {}
    for judge in judges:
        level = str(judge.level)
        if level not in units:
            try:
                units[level] = dispatch_units(trace, level)
            except Exception as exc:
                log.warning("could not split trace %s at level %s: %r", getattr(trace, "trace_id", "?"), level, exc)
                skip = EvalResult.skip(SkipReason.ERROR, f"{type(exc).__name__}: {exc}"[:300])
                yield PreparedJudgement(judge, level, None, None, None, None, skip)
                continue
        for subject, span_id, agent, model in units[level]:
            yield PreparedJudgement(judge, level, span_id, agent, model, *_request(judge, subject, mode, task))


def _request(judge: LLMJudge, subject: Any, mode: str, task: Any) -> tuple[JudgeRequest | None, EvalResult | None]:
    if judge.needs_ground_truth and (task is None or mode != "experiment"):
        return None, EvalResult.skip(SkipReason.NEEDS_GROUND_TRUTH, f"{judge.name} needs a task (ground truth)")
    try:
        built = judge.request(subject, task) if judge.needs_ground_truth else judge.request(subject)
    except Exception as exc:
        log.debug("judge %s could not build its prompt", judge.name, exc_info=True)
        return None, EvalResult.skip(SkipReason.ERROR, f"{type(exc).__name__}: {exc}"[:300])
    if isinstance(built, EvalResult):
        return None, built
    return built, None


def prepare_session(session: Session, judges: Iterable[LLMJudge]) -> Iterator[PreparedJudgement]:
    """One PreparedJudgement per session-level judge of `judges` (the others are not for a session), in judge
    order: level "session", no span, agent or model; `turn_trace_ids` the session's turns' trace ids in order.
    A session is judged in monitor mode: a judge that needs ground truth skips; one that raises while building
    its prompt gets an `error` skip."""
    trace_ids = tuple(session.trace_ids)
    for judge in judges:
        if str(judge.level) != "session":
            continue
        request, result = _request(judge, session, "monitor", None)
        yield PreparedJudgement(judge, "session", None, None, None, request, result, trace_ids)
