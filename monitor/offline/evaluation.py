"""Offline evaluation, as `agent-monitor evaluate` runs it: datasets, matching tasks to traces, running the
selected evaluators (spec.py) and summarizing the results with their `min_pass_rate` gates."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluators.judges import JudgeSettings, LLMJudge
from evaluators.pricing import ModelPrice
from evaluators.sdk import (
    Dataset,
    EvaluationRecord,
    Mode,
    ScoreSummary,
    Task,
    scores,
    summarize,
)
from evaluators.signatures import SignatureRule
from evaluators.traces.model import Trace
from monitor.offline.records import Result, as_records, full_records, trace_results
from monitor.offline.sessions import evaluate_sessions, is_session_level, sessions_for
from monitor.offline.signatures import SignatureGroup, group_failures, groups_json
from monitor.offline.spec import InputError, Selected
from monitor.offline.spend import SpendSummary, spend_of

if TYPE_CHECKING:
    from evaluators.sdk import BaseEvaluator
    from monitor.offline.judges import JudgeSpend, Progress

TASK_ID_ATTRIBUTES = ("task.id", "task_id", "baggage.task.id")


# --- datasets and matching ---------------------------------------------------------------------


def read_dataset(path: str | os.PathLike[str]) -> Dataset:
    """A dataset from a `.csv` file (one task per row) or a JSON file (a list of tasks, or {tasks: [...]})."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".csv":
            return Dataset.from_csv(path)
        return Dataset.from_json(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc}") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None


def normalize_text(text: str) -> str:
    """`text` with runs of whitespace collapsed to one space and the ends trimmed."""
    return " ".join(text.split())


class TaskMatcher:
    """Finds each trace's task: by a task id attribute on a root span, else by identical input text."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.by_input: dict[str, Task] = {}
        for task in dataset:
            if isinstance(task.input, str) and task.input.strip():
                self.by_input.setdefault(normalize_text(task.input), task)

    def match(self, trace: Trace) -> tuple[Task | None, str]:
        """(task, how): how is "task_id", "input" or "unmatched"."""
        for root in trace.roots:
            for key in TASK_ID_ATTRIBUTES:
                value = root.attributes.get(key)
                if isinstance(value, str | int) and not isinstance(value, bool):
                    task = self.dataset.get(str(value))
                    if task is not None:
                        return task, "task_id"
        text = trace.input
        if isinstance(text, str) and text.strip():
            task = self.by_input.get(normalize_text(text))
            if task is not None:
                return task, "input"
        return None, "unmatched"


# --- the run and its report --------------------------------------------------------------------


@dataclass(slots=True)
class EvaluatorReport:
    """One evaluator's results over all traces, with its gate verdict."""

    label: str
    name: str
    level: str
    kind: str
    threshold: float
    min_pass_rate: float | None
    summary: ScoreSummary
    # Every scored result's score, in trace order (for `compare`'s rank test); not in the evaluate output.
    scores: list[float] = field(default_factory=list, repr=False)

    @property
    def gate(self) -> str:
        """One of: none (no min_pass_rate set), pass, fail (pass rate below it, or nothing scored)."""
        if self.min_pass_rate is None:
            return "none"
        rate = self.summary.pass_rate
        return "pass" if rate is not None and rate >= self.min_pass_rate else "fail"

    def to_dict(self) -> dict[str, Any]:
        s = self.summary
        return {
            "evaluator": self.label,
            "name": self.name,
            "level": self.level,
            "kind": self.kind,
            "threshold": self.threshold,
            "min_pass_rate": self.min_pass_rate,
            "gate": self.gate,
            "total": s.total,
            "scored": s.count,
            "skipped": s.skipped,
            "skip_counts": s.skip_counts,
            "passed": s.passed,
            "failed": s.failed,
            "pass_rate": s.pass_rate,
            "mean": s.mean,
            "p50": s.p50,
            "p95": s.p95,
            "min": s.min,
            "max": s.max,
        }


@dataclass(slots=True)
class OfflineReport:
    """Everything an offline run found: counts, per-evaluator summaries, the worst results."""

    mode: str
    trace_count: int
    evaluators: list[EvaluatorReport]
    worst: list[EvaluationRecord]
    dataset: str | None = None
    task_count: int = 0
    matched: dict[str, int] = field(default_factory=dict)
    tasks_without_trace: int = 0
    judge_spend: dict[str, JudgeSpend] = field(default_factory=dict)
    # the failing results grouped by failure signature, most results first
    signatures: list[SignatureGroup] = field(default_factory=list)
    spend: SpendSummary = field(default_factory=SpendSummary)  # what the traces' LLM calls cost
    session_count: int | None = None  # conversations the traces hold (None: no session-level evaluator selected)

    @property
    def failed_gates(self) -> list[EvaluatorReport]:
        return [e for e in self.evaluators if e.gate == "fail"]

    @property
    def exit_code(self) -> int:
        """0 when every min_pass_rate gate holds, 1 when one is missed."""
        return 1 if self.failed_gates else 0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"mode": self.mode, "traces": self.trace_count}
        if self.session_count is not None:
            data["sessions"] = self.session_count
        if self.dataset is not None:
            data["dataset"] = {
                "name": self.dataset,
                "tasks": self.task_count,
                "matched": self.matched,
                "tasks_without_trace": self.tasks_without_trace,
            }
        data["evaluators"] = [e.to_dict() for e in self.evaluators]
        data["worst"] = [
            record.model_dump(
                mode="json",
                include={"trace_id", "evaluator", "level", "span_id", "agent_name", "task_id"}
                | {"score", "passed", "explanation", "details"},
            )
            for record in self.worst
        ]
        data.update(groups_json(self.signatures))
        data["spend"] = self.spend.to_dict()
        if self.judge_spend:
            data["judge_spend"] = {label: asdict(spend) for label, spend in self.judge_spend.items()}
        data["failed_gates"] = [e.label for e in self.failed_gates]
        data["exit_code"] = self.exit_code
        return data


def evaluate_offline(
    traces: Sequence[Trace],
    selection: Sequence[Selected],
    dataset: Dataset | None = None,
    worst: int = 10,
    *,
    judges: JudgeSettings | None = None,
    progress: Progress | None = None,
    signature_rules: Sequence[SignatureRule] = (),
    prices: Mapping[str, ModelPrice] | None = None,
) -> OfflineReport:
    """Run the selected evaluators over every trace: experiment mode with a dataset, monitor mode without;
    session-level ones once per conversation the traces hold (`sessions`).
    LLM judges go through one judge engine with `judges` settings (none: every judgement skips). Failures are
    grouped by signature, with `signature_rules` (the spec's `signatures.rules`). What the traces cost and the
    judges' spend are priced with `prices` (the spec's `pricing.models` overrides) winning over the price table."""
    mode: Mode = "experiment" if dataset is not None else "monitor"
    tasks, matched, used = match_tasks(traces, dataset)
    by_label: dict[str, list[Result]] = {s.label: [] for s in selection}
    rules = rule_labels(selection)
    for trace, task in zip(traces, tasks, strict=True):
        trace_results(trace, rules, mode, task, by_label)
    sessions = sessions_for(traces, selection, prices)  # grouped once, for the session rules and judges
    session_count, by_session = evaluate_sessions(sessions, selection)
    for label, records in by_session.items():
        by_label[label].extend(records)
    chosen_judges = [(s.evaluator, s.label) for s in selection if isinstance(s.evaluator, LLMJudge)]
    spend: dict[str, JudgeSpend] = {}
    if chosen_judges:
        from monitor.offline.judges import run_judges  # the judge engine and its client, only for judges

        settings = judges if judges is not None else JudgeSettings()
        records, observer = run_judges(
            traces,
            chosen_judges,
            settings,
            mode=mode,
            tasks=tasks,
            progress=progress,
            prices=prices,
            sessions=sessions,
        )
        for record in records:
            by_label[record.evaluator].append(record)
        spend = observer.by_judge
    return build_report(
        selection,
        by_label,
        mode=mode,
        trace_count=len(traces),
        dataset=dataset,
        matched=matched,
        tasks_used=len(used),
        worst=worst,
        signature_rules=signature_rules,
        spend=spend_of(traces, prices),
        session_count=session_count,
        judge_spend=spend,
    )


def rule_labels(selection: Sequence[Selected]) -> list[tuple[BaseEvaluator, str]]:
    """The (evaluator, label) of the rules run on each trace: neither judges nor session-level ones."""
    return [
        (s.evaluator, s.label) for s in selection if not isinstance(s.evaluator, LLMJudge) and not is_session_level(s)
    ]


def build_report(
    selection: Sequence[Selected],
    by_label: Mapping[str, Sequence[Result]],
    *,
    mode: Mode,
    trace_count: int,
    dataset: Dataset | None,
    matched: dict[str, int],
    tasks_used: int,
    worst: int,
    signature_rules: Sequence[SignatureRule],
    spend: SpendSummary,
    session_count: int | None,
    judge_spend: dict[str, JudgeSpend] | None = None,
) -> OfflineReport:
    """The report of a run from every evaluator's results by label (in trace order, then the sessions', then the
    judges'): summaries and gates, the worst results, the failure signatures."""
    named = full_records(r for results in by_label.values() for r in results)
    return OfflineReport(
        mode=mode,
        trace_count=trace_count,
        evaluators=[evaluator_report(s, by_label[s.label]) for s in selection],
        worst=worst_records(named, worst),
        dataset=dataset.name if dataset is not None else None,
        task_count=len(dataset) if dataset is not None else 0,
        matched=matched if dataset is not None else {},
        tasks_without_trace=len(dataset) - tasks_used if dataset is not None else 0,
        judge_spend=judge_spend or {},
        signatures=group_failures(named, signature_rules),
        spend=spend,
        session_count=session_count,
    )


def match_tasks(traces: Sequence[Trace], dataset: Dataset | None) -> tuple[list[Task | None], dict[str, int], set[str]]:
    """Each trace's task (None: unmatched, or no dataset), the match counts by how (task_id, input, unmatched)
    and the ids of the tasks some trace matched."""
    matched = {"task_id": 0, "input": 0, "unmatched": 0}
    used: set[str] = set()
    if dataset is None:
        return [None] * len(traces), matched, used
    matcher = TaskMatcher(dataset)
    tasks: list[Task | None] = []
    for trace in traces:
        task, how = matcher.match(trace)
        matched[how] += 1
        if task is not None:
            used.add(task.task_id)
        tasks.append(task)
    return tasks, matched, used


def evaluator_report(chosen: Selected, results: Sequence[Result]) -> EvaluatorReport:
    """`chosen`'s summary over its results, with its gate."""
    records = as_records(results)
    evaluator = chosen.evaluator
    return EvaluatorReport(
        label=chosen.label,
        name=evaluator.name,
        level=str(evaluator.level),
        kind=evaluator.kind,
        threshold=evaluator.threshold,
        min_pass_rate=chosen.min_pass_rate,
        summary=summarize(records, chosen.label),
        scores=scores(records),
    )


def worst_records(records: Sequence[EvaluationRecord], limit: int) -> list[EvaluationRecord]:
    """The `limit` worst scored records: failures first, then by score; perfect passes are left out."""
    candidates = [r for r in records if r.scored and not (r.passed is not False and r.score == 1.0)]
    ordered = sorted(candidates, key=lambda r: (r.passed is not False, r.score))
    return ordered[: max(limit, 0)]
