"""run_evaluators: run evaluators over one trace at their levels and record every result.

Dispatch: a trace-level evaluator runs once, an agent-level one once per `trace.agent_traces()`, an
llm-level one once per `trace.get_llm_calls()` (no agents or no LLM calls: no records for it). A session-level
evaluator is not run on a trace: `dispatch_session` runs it once on a whole conversation (`evaluators.sessions`).

An evaluator that needs ground truth, run in monitor mode or without a task, gets a `needs_ground_truth`
skip for each dispatch unit (so record counts do not depend on the mode). An exception raised by an
evaluator becomes an `error` skip naming the exception; the other evaluators run on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal, cast

from .base import BaseEvaluator
from .result import EvalResult, EvaluationRecord, Level, SkipReason

if TYPE_CHECKING:
    from evaluators.sessions.model import Session
    from evaluators.traces.model import Trace

    from .task import Task

log = logging.getLogger(__name__)

Mode = Literal["monitor", "experiment"]
MODES: tuple[str, ...] = ("monitor", "experiment")
_MAX_ERROR_MESSAGE = 300


@dataclass(frozen=True, slots=True)
class _Unit:
    """One thing to evaluate, with the identity its records carry."""

    subject: Any
    span_id: str | None
    agent_name: str | None
    model: str | None


@dataclass(slots=True)
class Dispatched:
    """One evaluator's result on one dispatch unit, before it becomes a record (cheap to build in bulk)."""

    evaluator: BaseEvaluator
    level: Level
    span_id: str | None
    agent_name: str | None
    model: str | None
    result: EvalResult
    duration_ms: float


def dispatch(
    trace: Trace,
    evaluators: Iterable[BaseEvaluator],
    mode: Mode = "monitor",
    task: Task | None = None,
) -> Iterator[Dispatched]:
    """Run every evaluator at its level over `trace`, yielding results in evaluator order then dispatch order.

    Dispatch units are computed once per level and shared by every evaluator of that level. In "experiment"
    mode `task` is given to evaluators that take one; in "monitor" mode it is not.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    chosen = list(evaluators)
    for candidate in chosen:
        if not isinstance(candidate, BaseEvaluator):
            raise TypeError(f"not an evaluator: {candidate!r} (decorate functions with @evaluator)")
    effective_task = task if mode == "experiment" else None
    units: dict[str, list[_Unit]] = {}
    where = f"trace {trace.trace_id}"
    for evaluator in chosen:
        level = cast(Level, str(evaluator.level))  # BaseEvaluator checks it is one of LEVELS
        if level not in units:
            try:
                units[level] = _units(trace, level)
            except Exception as exc:  # a trace the views cannot split: say so instead of failing the batch
                log.warning("could not split trace %s at level %s: %r", trace.trace_id, level, exc)
                units[level] = [_Unit(_ViewError(exc), None, None, None)]
        needs_task = bool(evaluator.needs_ground_truth) and effective_task is None  # once an evaluator, not a unit
        for unit in units[level]:
            started = perf_counter()
            result = _evaluate(evaluator, unit.subject, where, effective_task, needs_task)
            elapsed_ms = (perf_counter() - started) * 1000.0
            yield Dispatched(evaluator, level, unit.span_id, unit.agent_name, unit.model, result, elapsed_ms)


def run_evaluators(
    trace: Trace,
    evaluators: Iterable[BaseEvaluator],
    mode: Mode = "monitor",
    task: Task | None = None,
) -> list[EvaluationRecord]:
    """Every evaluator's records for one trace, in evaluator order then dispatch order (see `dispatch`)."""
    service = trace.service_name or None
    task_id = task.task_id if task is not None and mode == "experiment" else None
    return [
        record_of(d, trace.trace_id, d.evaluator.name, service, task_id)
        for d in dispatch(trace, evaluators, mode, task)
    ]


def record_of(d: Dispatched, trace_id: str, label: str, service: str | None, task_id: str | None) -> EvaluationRecord:
    """The record of one dispatched result, under the evaluator name `label`."""
    r = d.result
    # Every field comes from a validated EvalResult or the runner itself: no second validation.
    return EvaluationRecord.model_construct(
        trace_id=trace_id,
        evaluator=label,
        level=d.level,
        span_id=d.span_id,
        agent_name=d.agent_name,
        model=d.model,
        service=service,
        task_id=task_id,
        score=r.score,
        passed=r.passed,
        skipped=r.is_skipped,
        skip_reason=r.skip_reason,
        explanation=r.explanation,
        details=r.details,
        duration_ms=d.duration_ms,
        failure=r.failure,
    )


@dataclass(frozen=True, slots=True)
class _ViewError:
    """Stands in for the subjects of a level whose views failed to build."""

    exc: Exception


def dispatch_units(trace: Trace, level: str) -> list[tuple[Any, str | None, str | None, str | None]]:
    """The subjects an evaluator of `level` runs on, each as (subject, span_id, agent_name, model)."""
    return [(u.subject, u.span_id, u.agent_name, u.model) for u in _units(trace, level)]


def _units(trace: Trace, level: str) -> list[_Unit]:
    if level == "session":
        return []  # evaluated on a whole conversation (dispatch_session), never on one trace
    if level == "trace":
        root = trace.root
        return [_Unit(trace, root.span_id if root is not None else None, None, None)]
    if level == "agent":
        return [_Unit(a, a.agent_span_id, a.agent_name, _single_model(a)) for a in trace.agent_traces()]
    if level == "llm":
        return [_Unit(c, c.span_id, c.agent_name, c.model) for c in trace.get_llm_calls()]
    raise ValueError(f"unknown evaluator level {level!r}")


def _single_model(agent: Any) -> str | None:
    """The model an agent's LLM calls used, when they all used one."""
    steps = getattr(agent, "llm_steps", None) or []
    if callable(steps):
        steps = steps()
    models = {step.model for step in steps if getattr(step, "model", None)}
    return models.pop() if len(models) == 1 else None


def dispatch_session(session: Session, evaluators: Iterable[BaseEvaluator]) -> Iterator[Dispatched]:
    """Run every session-level evaluator of `evaluators` once over `session` (the others are not for it), in
    evaluator order. A session is evaluated in monitor mode: an evaluator that needs ground truth skips."""
    for evaluator in evaluators:
        if not isinstance(evaluator, BaseEvaluator):
            raise TypeError(f"not an evaluator: {evaluator!r} (decorate functions with @evaluator)")
        if str(evaluator.level) != "session":
            continue
        started = perf_counter()
        result = (
            _needs_task(evaluator) if evaluator.needs_ground_truth else _run(evaluator, session, session.session_id)
        )
        elapsed_ms = (perf_counter() - started) * 1000.0
        yield Dispatched(evaluator, "session", None, None, None, result, elapsed_ms)


def _run(evaluator: BaseEvaluator, subject: Any, where: str, task: Task | None = None) -> EvalResult:
    """`evaluator` on `subject`; an exception becomes an `error` skip naming it."""
    try:
        return evaluator.run(subject, task=task)
    except Exception as exc:
        log.debug("evaluator %s failed on %s", evaluator.name, where, exc_info=True)
        return _error_skip(exc)


def _evaluate(evaluator: BaseEvaluator, subject: Any, where: str, task: Task | None, needs_task: bool) -> EvalResult:
    """`evaluator` on one dispatch unit's subject; an `error` skip for a level whose views failed, a
    `needs_ground_truth` one when it needs a task and has none (`needs_task`)."""
    if isinstance(subject, _ViewError):
        return _error_skip(subject.exc)
    if needs_task:
        return _needs_task(evaluator)
    return _run(evaluator, subject, where, task)


def _error_skip(exc: BaseException) -> EvalResult:
    return EvalResult.skip(SkipReason.ERROR, _error_message(exc), {"exception": type(exc).__name__})


def _needs_task(evaluator: BaseEvaluator) -> EvalResult:
    return EvalResult.skip(SkipReason.NEEDS_GROUND_TRUTH, f"{evaluator.name} needs a task (ground truth)")


def _error_message(exc: BaseException) -> str:
    text = str(exc)
    if len(text) > _MAX_ERROR_MESSAGE:
        text = text[: _MAX_ERROR_MESSAGE - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
