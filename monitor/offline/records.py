"""The rules' results of an offline run, by evaluator label, kept lean: a result that only counts toward its
evaluator's summary (a perfect pass, a skip) is an `CountedResult` of six fields; only the results a report names (the
failures and the imperfect scores: the worst list, the failure signatures) become full `EvaluationRecord`s.

Building a pydantic record costs more than most rules do, and a worker process ships outcomes far more cheaply
than records. Both kinds carry what `evaluators.sdk.summarize` reads, in trace order, so summaries, the worst list
and the signature groups are those of the full records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from evaluators.sdk import Dispatched, EvaluationRecord, Mode, Task, dispatch, record_of, run_evaluators

if TYPE_CHECKING:
    from evaluators.sdk import BaseEvaluator
    from evaluators.traces.model import Trace


@dataclass(frozen=True, slots=True)
class CountedResult:
    """A result the report only counts: the fields of an EvaluationRecord that a summary reads."""

    evaluator: str
    level: str
    score: float | None
    passed: bool | None
    skipped: bool
    skip_reason: Any  # SkipReason | None


Result = EvaluationRecord | CountedResult
Chosen = tuple["BaseEvaluator", str]  # (evaluator, its report label)


def named(score: float | None, passed: bool | None, skipped: bool) -> bool:
    """Whether a report may name this result: a failure, or a scored result below 1 (`worst_records`' candidates
    and `group_failures`' inputs are among these)."""
    return passed is False or (not skipped and score is not None and score != 1.0)


def as_records(results: Sequence[Result]) -> list[EvaluationRecord]:
    """`results` typed as records for the aggregations, which read only fields an CountedResult has."""
    return cast(list[EvaluationRecord], results)


def trace_results(
    trace: Trace, chosen: Sequence[Chosen], mode: Mode, task: Task | None, into: dict[str, list[Result]]
) -> None:
    """Run the `chosen` rules over `trace` (one dispatch: the views of a level are split once for all of them),
    appending each result to `into[label]` in dispatch order."""
    labels = {id(evaluator): label for evaluator, label in chosen}
    if len(labels) < len(chosen):  # one evaluator object under two labels: run each entry on its own
        for evaluator, label in chosen:
            for record in run_evaluators(trace, [evaluator], mode=mode, task=task):
                into[label].append(_lean(record, label))
        return
    service = trace.service_name or None
    task_id = task.task_id if task is not None and mode == "experiment" else None
    for d in dispatch(trace, [evaluator for evaluator, _ in chosen], mode, task):
        into[labels[id(d.evaluator)]].append(_result(trace.trace_id, labels[id(d.evaluator)], d, service, task_id))


def _result(trace_id: str, label: str, d: Dispatched, service: str | None, task_id: str | None) -> Result:
    r = d.result
    skipped = r.is_skipped
    if not named(r.score, r.passed, skipped):
        return CountedResult(label, d.level, r.score, r.passed, skipped, r.skip_reason)
    return record_of(d, trace_id, label, service, task_id)


def _lean(record: EvaluationRecord, label: str) -> Result:
    if not named(record.score, record.passed, record.skipped):
        return CountedResult(label, str(record.level), record.score, record.passed, record.skipped, record.skip_reason)
    return record if record.evaluator == label else record.model_copy(update={"evaluator": label})


def full_records(results: Iterable[Result]) -> list[EvaluationRecord]:
    """The full records among `results` (the ones a report may name), in order."""
    return [r for r in results if isinstance(r, EvaluationRecord)]
