"""What `agent-monitor dataset export` writes: the SDK's tasks made of stored results and reviewers' verdicts.

The selection (`select`): the failing results (of an evaluator, since a time), the failing results with one failure
signature, or (`reviewed`) the results with a review in force, whatever their verdict (a confirmed pass is what
gives an expected trajectory, a missed failure is a test case too). One task per trace, newest first (`task_of`):

- task_id: the trace id; input: the stored trace's, else the snapshot a review took of it (the trace pruned since);
- expected_output: the newest `corrected_label` of a review in force of the trace (a reviewer's corrected answer);
- expected_trajectory: when the run is confirmed good for an evaluator (`confirmed_for`): a review in force of
  one of its results confirmed the verdict as good (agreed with a pass, or disagreed with a failure) and none of its
  results' reviews confirmed one as bad (agreed with a failure, or disagreed with a pass). Each evaluator judges its
  own part of the run, so another evaluator's confirmed failure does not take the trajectory away (the metadata
  names both: `confirmed_good_for`, `confirmed_bad_for`); with `--evaluator`, only that evaluator's reviews decide.
  Its tool calls in order, from the stored step tree (none when the tree was cut at `store.max_steps`), else the
  review's snapshot;
- constraints: of such a confirmed run, its cost and latency times MARGIN (a budget the next version must stay in);
- metadata: the source trace, its service and variant, the selected results (evaluator, level, verdict, signature,
  the review in force), and the evaluators, signatures and reviewers named in them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from evaluators.sdk import Constraints, Task, TrajectoryStep
from monitor.review.models import ResultFilter, TraceDetail
from monitor.review.of_store import StoreReviewReader
from monitor.review.service import RESOLVE_AFTER
from monitor.review.signature_models import SignatureFilter
from monitor.store.reviews import StoredReview

MARGIN = 1.5  # constraints: the confirmed run's cost and latency times this
PAGE = 500  # results read per page
SIGNATURE_PAGE = 200  # traces per page of a signature (the reader's most)
OUTCOMES = {True: "pass", False: "fail", None: "skip"}


class Picked(NamedTuple):
    """One selected result: its key, verdict, signature (when known) and when it was evaluated (or reviewed)."""

    trace_id: str
    evaluator: str
    level: str
    span_id: str
    outcome: str
    score: float | None
    signature: str | None
    at: float


class Selection(NamedTuple):
    """Which results to export: `reviewed` (any verdict with a review in force), else the failing ones; `since`
    (Unix seconds) on the evaluation time (with `reviewed`: the review's time)."""

    reviewed: bool = False
    evaluator: str | None = None
    signature: str | None = None
    since: float | None = None


class NoSuchSignature(LookupError):
    """The store holds no result with this failure signature."""


def select(reader: StoreReviewReader, selection: Selection, limit: int, now: float) -> dict[str, list[Picked]]:
    """The selected results of at most `limit` traces, per trace id, newest trace first."""
    if selection.reviewed:
        picked: Iterator[Picked] = _reviewed(reader, selection)
    elif selection.signature is not None:
        picked = _with_signature(reader, selection, selection.signature, now)
    else:
        picked = _failing(reader, selection)
    traces: dict[str, list[Picked]] = {}
    for result in picked:
        if result.trace_id not in traces:
            if len(traces) >= limit:
                break
            traces[result.trace_id] = []
        traces[result.trace_id].append(result)
    return traces


def _failing(reader: StoreReviewReader, selection: Selection) -> Iterator[Picked]:
    where = ResultFilter(evaluator=selection.evaluator, outcome="fail", since=selection.since)
    cursor: str | None = None
    while True:
        page = reader.results(where, PAGE, cursor)
        for item in page.items:
            yield Picked(
                item.trace_id,
                item.evaluator,
                item.level,
                item.span_id or "",
                "fail",
                item.score,
                None,
                item.evaluated_at,
            )
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _with_signature(reader: StoreReviewReader, selection: Selection, signature: str, now: float) -> Iterator[Picked]:
    where = SignatureFilter(since=selection.since or 0.0, until=now + 1.0, evaluator=selection.evaluator)
    cursor: str | None = None
    while True:
        detail = reader.signature(signature, where, SIGNATURE_PAGE, cursor, now, RESOLVE_AFTER)
        if detail is None:
            if cursor is None:
                raise NoSuchSignature(signature)
            return
        for trace in detail.traces:
            for v in trace.verdicts:
                if v.signature == signature and selection.evaluator in (None, v.evaluator):
                    yield Picked(
                        trace.trace_id,
                        v.evaluator,
                        v.level,
                        v.span_id or "",
                        "fail",
                        v.score,
                        v.signature,
                        v.evaluated_at,
                    )
        if detail.next_cursor is None:
            return
        cursor = detail.next_cursor


def _reviewed(reader: StoreReviewReader, selection: Selection) -> Iterator[Picked]:
    for review in reversed(reader.reviews_in_force(selection.evaluator, selection.since)):  # newest first
        if selection.signature in (None, review.verdict_signature):
            yield Picked(
                review.trace_id,
                review.evaluator,
                review.level,
                review.span_id,
                OUTCOMES[review.verdict_passed],
                review.verdict_score,
                review.verdict_signature,
                review.created_at,
            )


def confirms_good(review: StoredReview) -> bool:
    """The reviewer says the run was right: agreed with a pass, or disagreed with a failure (a false alarm)."""
    return (review.verdict_passed is True and review.agreement == "agree") or review.false_alarm


def confirms_bad(review: StoredReview) -> bool:
    """The reviewer says the run was wrong: agreed with a failure, or disagreed with a pass (a miss)."""
    return (review.verdict_passed is False and review.agreement == "agree") or review.miss


def confirmed_for(reviews: list[StoredReview]) -> tuple[list[str], list[str]]:
    """(the evaluators the run is confirmed good for, those it is confirmed bad for): good for an evaluator when a
    review in force of its results confirms good and none confirms bad; bad when one confirms bad."""
    bad = sorted({r.evaluator for r in reviews if confirms_bad(r)})
    good = sorted({r.evaluator for r in reviews if confirms_good(r)} - set(bad))
    return good, bad


def task_of(
    trace_id: str,
    picked: list[Picked],
    detail: TraceDetail | None,
    reviews: list[StoredReview],
    evaluator: str | None = None,
) -> Task:
    """The task of one trace: its selected results `picked`, what the store holds of it (`detail`, None when it
    was pruned) and the reviews in force of its results; `evaluator`: only its reviews confirm the run good."""
    newest = sorted(reviews, key=lambda r: r.created_at, reverse=True)
    snapshot = next((r.task for r in newest if r.task is not None), None) or {}
    summary = detail.summary if detail is not None else None
    corrected = next((r for r in newest if r.corrected_label), None)
    good_for, bad_for = confirmed_for(newest)
    if evaluator is not None:
        good_for = [e for e in good_for if e == evaluator]
    good = next((r for r in newest if r.evaluator in good_for and confirms_good(r)), None)
    trajectory = constraints = None
    if good is not None:
        taken = good.task or snapshot
        trajectory = _trajectory(detail, taken)
        cost = summary.cost_usd if summary is not None and summary.cost_usd is not None else taken.get("cost_usd")
        duration = summary.duration_ms if summary is not None and summary.duration_ms else taken.get("duration_ms")
        constraints = _constraints(cost, duration)
    in_force = {(r.evaluator, r.level, r.span_id): r for r in reviews}
    results = [_result_meta(p, in_force.get((p.evaluator, p.level, p.span_id))) for p in picked]
    metadata: dict[str, Any] = {
        "source": "agent-monitor",
        "trace_id": trace_id,
        "service": summary.service if summary is not None else snapshot.get("service"),
        "variant": summary.variant if summary is not None else "",
        "trace_stored": detail is not None,
        "evaluators": sorted({p.evaluator for p in picked}),
        "signatures": sorted({s for s in (p.signature or _signature(in_force, p) for p in picked) if s}),
        "reviewers": sorted({r.reviewer for r in reviews}),
        "results": results,
    }
    if corrected is not None:
        metadata["expected_output_by"] = corrected.reviewer
    if good is not None:
        metadata["confirmed_good_by"] = good.reviewer
        metadata["confirmed_good_for"] = good_for
    if bad_for:
        metadata["confirmed_bad_for"] = bad_for
    return Task(
        task_id=trace_id,
        input=summary.input if summary is not None and summary.input is not None else snapshot.get("input"),
        expected_output=corrected.corrected_label if corrected is not None else None,
        expected_trajectory=trajectory,
        constraints=constraints,
        metadata=metadata,
    )


def _signature(in_force: dict[tuple[str, str, str], StoredReview], picked: Picked) -> str | None:
    review = in_force.get((picked.evaluator, picked.level, picked.span_id))
    return review.verdict_signature if review is not None else None


def _trajectory(detail: TraceDetail | None, snapshot: dict[str, Any]) -> list[TrajectoryStep] | None:
    """The run's tool calls in order: from the stored step tree (None when it was cut), else the snapshot."""
    if detail is not None and detail.steps:
        if detail.summary.steps_truncated:
            return None
        names = [step.name for step in detail.steps if step.kind == "tool"]
    elif snapshot.get("trajectory") is not None:
        names = [str(name) for name in snapshot["trajectory"]]
    elif detail is not None:
        names = list(detail.summary.tools)
    else:
        return None
    return [TrajectoryStep(tool=name) for name in names if name]


def _constraints(cost: float | None, duration_ms: float | None) -> Constraints | None:
    max_cost = round(cost * MARGIN, 10) if cost is not None and cost > 0 else None
    max_latency_ms = round(duration_ms * MARGIN, 3) if duration_ms is not None and duration_ms > 0 else None
    if max_cost is None and max_latency_ms is None:
        return None
    return Constraints(max_cost=max_cost, max_latency_ms=max_latency_ms)


def _result_meta(picked: Picked, review: StoredReview | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"evaluator": picked.evaluator, "level": picked.level, "outcome": picked.outcome}
    if picked.span_id:
        meta["span_id"] = picked.span_id
    if picked.score is not None:
        meta["score"] = picked.score
    signature = picked.signature or (review.verdict_signature if review is not None else None)
    if signature:
        meta["signature"] = signature
    if review is not None:
        meta["review"] = {
            "reviewer": review.reviewer,
            "agreement": review.agreement,
            "reviewed_at": review.created_at,
            **({"corrected_label": review.corrected_label} if review.corrected_label else {}),
            **({"corrected_score": review.corrected_score} if review.corrected_score is not None else {}),
            **({"note": review.note} if review.note else {}),
        }
    return meta
