"""LLM judges in an offline run (`agent-monitor evaluate`): every trace's judgements through one JudgeEngine.

The judges' settings come from the spec file's `judges` section when it has one (a daemon config works as a
spec), with the same GEMINI_API_KEY / GOOGLE_API_KEY fallback as the daemon. Sampling is not applied offline
(as for rules: a run judges what it is given). Judgements run concurrently within the engine's limits; the
spend (requests, tokens, USD priced like the daemon's `agent_monitor_judge_cost_usd_total`, with the spec's
`pricing.models` overrides) per judge goes into the report.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from evaluators.judges import JudgeSettings, LLMJudge, place_turn, prepare, prepare_session
from evaluators.pricing import ModelPrice
from evaluators.sdk import EvalResult, EvaluationRecord, Task
from evaluators.sessions import Session, group_sessions
from evaluators.traces.model import Trace
from monitor.config.loader import judge_key_from_env
from monitor.config.models import JudgesConfig
from monitor.offline.session_records import session_record

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class JudgeSpend:
    """What one judge cost in an offline run: `cost_usd` of its priced requests, `unpriced` requests that spent
    tokens on a model with no known price (not in `cost_usd`)."""

    requests: int = 0
    cached: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    cost_usd: float = 0.0
    unpriced: int = 0


@dataclass(slots=True)
class SpendObserver:
    """The engine's observer, summing per judge label."""

    by_judge: dict[str, JudgeSpend] = field(default_factory=dict)

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
        spend = self.by_judge.setdefault(judge, JudgeSpend(model=model))
        if status == "cached":
            spend.cached += 1
            return
        spend.requests += 1
        spend.failed += status != "ok"
        spend.input_tokens += input_tokens
        spend.output_tokens += output_tokens
        if cost_usd is not None:
            spend.cost_usd += cost_usd
        elif input_tokens > 0 or output_tokens > 0:
            spend.unpriced += 1

    def budget(self, judge: str, remaining_tokens: float) -> None:
        """Budgets are the engine's business; the report shows the spend."""

    def blocked(self, judge: str, model: str, reason: str) -> None:
        """A block is a failed request (`request` counted it); its skip's explanation names the reason."""

    def capacity_skip(self, judge: str, limit: str) -> None:
        """The skips are in the report's results."""


def judge_settings(spec: Mapping[str, Any] | None, env: Mapping[str, str]) -> JudgeSettings:
    """The `judges` section of a spec file (validated like the daemon's), the key falling back to the env."""
    section = dict((spec or {}).get("judges") or {})
    if section.get("gemini_api_key") is None:
        key = judge_key_from_env(env)
        if key:
            section["gemini_api_key"] = key
    return JudgesConfig.model_validate(section).settings()


def run_judges(
    traces: Sequence[Trace],
    judges: Sequence[tuple[LLMJudge, str]],
    settings: JudgeSettings,
    *,
    mode: str = "monitor",
    tasks: Sequence[Task | None] | None = None,
    progress: Progress | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    sessions: Sequence[Session] | None = None,
) -> tuple[list[EvaluationRecord], SpendObserver]:
    """Every (judge, label) over every trace, the session judges over every session: the records, and the spend
    per label (`prices`: the `pricing.models` overrides). `sessions`: the traces' conversations when the caller
    has grouped them already (None: grouped here, if a session judge is chosen)."""
    spend = SpendObserver()
    records = asyncio.run(_run(traces, judges, settings, mode, tasks, progress, spend, prices, sessions))
    return records, spend


def _pending(
    traces: Sequence[Trace],
    judges: Sequence[tuple[LLMJudge, str]],
    mode: str,
    tasks: Sequence[Task | None] | None,
    prices: Mapping[str, ModelPrice] | None,
    sessions: Sequence[Session] | None,
) -> list[tuple[Trace | Session, str, Any, Task | None]]:
    """(subject, label, prepared judgement, task) of every judgement to make: each trace's, then each session's
    (session judges run once per conversation the traces hold, never per trace)."""
    label_of = {id(judge): label for judge, label in judges}
    pending: list[tuple[Trace | Session, str, Any, Task | None]] = []
    for index, trace in enumerate(traces):
        task = tasks[index] if tasks is not None else None
        for prepared in prepare(trace, [judge for judge, _ in judges], mode, task):
            pending.append((trace, label_of[id(prepared.judge)], prepared, task))
    session_judges = [judge for judge, _ in judges if str(judge.level) == "session"]
    if session_judges:
        for session in group_sessions(traces, prices=prices) if sessions is None else sessions:
            for prepared in prepare_session(session, session_judges):
                pending.append((session, label_of[id(prepared.judge)], prepared, None))
    return pending


async def _run(
    traces: Sequence[Trace],
    judges: Sequence[tuple[LLMJudge, str]],
    settings: JudgeSettings,
    mode: str,
    tasks: Sequence[Task | None] | None,
    progress: Progress | None,
    spend: SpendObserver,
    prices: Mapping[str, ModelPrice] | None,
    sessions: Sequence[Session] | None,
) -> list[EvaluationRecord]:
    from evaluators.judges.client import JudgeClient  # google-genai: loaded when judges run, not by the CLI
    from evaluators.judges.engine import JudgeEngine

    client = JudgeClient(settings) if settings.enabled else None
    engine = JudgeEngine(settings, client, observer=spend, prices=prices)
    pending = _pending(traces, judges, mode, tasks, prices, sessions)
    done = 0
    total = len(pending)

    async def one(subject: Trace | Session, label: str, prepared: Any, task: Task | None) -> EvaluationRecord:
        nonlocal done
        started = time.perf_counter()
        if prepared.request is None:
            result: EvalResult = prepared.result
        else:
            result = await engine.judge(prepared.judge, prepared.request, name=label)
        done += 1
        if progress is not None:
            progress(done, total)
        if isinstance(subject, Session):
            placed = place_turn(result, prepared.turn_trace_ids)
            return session_record(subject, label, placed, (time.perf_counter() - started) * 1000.0)
        trace = subject
        return EvaluationRecord.model_construct(
            trace_id=trace.trace_id,
            evaluator=label,
            level=prepared.level,
            span_id=prepared.span_id,
            agent_name=prepared.agent_name,
            model=prepared.model,
            service=trace.service_name or None,
            task_id=task.task_id if task is not None and mode == "experiment" else None,
            score=result.score,
            passed=result.passed,
            skipped=result.is_skipped,
            skip_reason=result.skip_reason,
            explanation=result.explanation,
            details=result.details,
            duration_ms=(time.perf_counter() - started) * 1000.0,
            failure=result.failure,
        )

    try:
        return list(await asyncio.gather(*(one(*item) for item in pending)))
    finally:
        await engine.aclose()


def stderr_progress(stream: TextIO = sys.stderr) -> Progress | None:
    """A one-line progress counter on a terminal (None when stderr is not one: CI logs stay clean)."""
    if not stream.isatty():
        return None

    def show(done: int, total: int) -> None:
        stream.write(f"\rjudging: {done}/{total}")
        if done == total:
            stream.write("\n")
        stream.flush()

    return show
