"""`agent-monitor evaluate` on every core: the trace files split into contiguous shards, one per process (the
command's own process takes the first; the others go to spawned workers), each shard decoded, assembled and
evaluated where it is read. A worker sends back lean results (`records`), each trace's cost and, for the
session-level evaluators, the turns that name a session; the command's process joins them in shard order, so the
report is the one a single process writes.

The shards must not share a trace: when a trace's spans, or log records that belong to another shard's spans,
are split between shards, the run starts over in one process (`run_sharded` returns None), as it does for inputs
too small to repay a worker's start-up, for judges (their engine runs in one event loop) and for any path that is
missing or too large (one process reports it as it always has).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from evaluators.judges import LLMJudge
from evaluators.sdk import Dataset, Mode
from evaluators.signatures import SignatureRule
from evaluators.traces import TraceDecodeError
from evaluators.traces.builder import build_trace, group_by_trace
from evaluators.traces.loader import MAX_FILE_BYTES, join_logs, read_paths, trace_files
from monitor.engine.gc_tuning import tune_gc
from monitor.engine.turn_wire import TrackedTurn
from monitor.offline.evaluation import OfflineReport, TaskMatcher, build_report, read_dataset, rule_labels
from monitor.offline.records import Result, trace_results
from monitor.offline.sessions import evaluate_sessions, is_session_level, sessions_of_turns
from monitor.offline.spec import Selected, pricing_overrides, selection_and_judges
from monitor.offline.spend import spend_summary, trace_cost

AUTO_MIN_BYTES = 2 * 1024 * 1024  # `--workers auto` below this many bytes of trace files: one process
MAX_AUTO_WORKERS = 8


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def shard_plan(paths: Sequence[str], workers: int | None) -> list[list[str]] | None:
    """The files of each shard, in order; None to run in one process. `workers` None is `auto`: usable cores
    (at most MAX_AUTO_WORKERS) when the files hold at least AUTO_MIN_BYTES; a number is used as given."""
    count = min(usable_cores(), MAX_AUTO_WORKERS) if workers is None else workers
    if count < 2:
        return None
    sized: list[tuple[str, int]] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            return None
        try:
            for file in trace_files(path):
                size = file.stat().st_size
                if size > MAX_FILE_BYTES:
                    return None
                sized.append((str(file), size))
        except OSError:
            return None
    total = sum(size for _, size in sized)
    if len(sized) < 2 or (workers is None and total < AUTO_MIN_BYTES):
        return None
    count = min(count, len(sized))
    shards: list[list[str]] = [[]]
    done = 0
    for name, size in sized:
        if shards[-1] and done >= total * len(shards) / count and len(shards) < count:
            shards.append([])
        shards[-1].append(name)
        done += size
    return shards if len(shards) > 1 else None


@dataclass(frozen=True, slots=True)
class ShardJob:
    files: list[str]
    spec: str | None
    dataset: str | None


@dataclass(slots=True)
class ShardResult:
    """What one shard found: `error` (a TraceDecodeError's text) or its traces' results, in trace order."""

    error: str | None = None
    trace_ids: list[str] = field(default_factory=list)
    stray_logs: int = 0  # log records that named no span of this shard
    by_label: dict[str, list[Result]] = field(default_factory=dict)
    costs: list[tuple[float | None, int, int]] = field(default_factory=list)
    turns: list[TrackedTurn] = field(default_factory=list)
    matched: dict[str, int] = field(default_factory=dict)
    tasks_used: set[str] = field(default_factory=set)


def evaluate_shard(job: ShardJob) -> ShardResult:
    """Decode, assemble and evaluate one shard's files (in a worker, or in the command's process)."""
    tune_gc()
    prices = pricing_overrides(job.spec)
    selection, _ = selection_and_judges(job.spec, prices)
    dataset = read_dataset(job.dataset) if job.dataset else None
    try:
        batch = read_paths(job.files)
    except TraceDecodeError as exc:
        return ShardResult(error=str(exc))
    stray = len(batch.logs) - join_logs(batch.spans, batch.logs)
    traces = [build_trace(spans, trace_id) for trace_id, spans in group_by_trace(batch.spans).items()]
    del batch
    result = ShardResult(trace_ids=[t.trace_id for t in traces], stray_logs=stray)
    mode: Mode = "experiment" if dataset is not None else "monitor"
    matcher = TaskMatcher(dataset) if dataset is not None else None
    result.matched = {"task_id": 0, "input": 0, "unmatched": 0}
    result.by_label = {s.label: [] for s in selection}
    rules = rule_labels(selection)
    for trace in traces:
        task = None
        if matcher is not None:
            task, how = matcher.match(trace)
            result.matched[how] += 1
            if task is not None:
                result.tasks_used.add(task.task_id)
        trace_results(trace, rules, mode, task, result.by_label)
        result.costs.append(trace_cost(trace, prices))
    if any(is_session_level(s) for s in selection):
        from monitor.offline.sessions import session_turns

        result.turns = session_turns(traces, prices)
    for trace in traces:
        trace.release()  # its views' cycles broken: freed at once, not by a collection walking every trace
    return result


def run_sharded(
    shards: list[list[str]],
    spec: str | None,
    dataset: Dataset | None,
    dataset_path: str | None,
    selection: Sequence[Selected],
    *,
    worst: int,
    signature_rules: Sequence[SignatureRule],
) -> OfflineReport | TraceDecodeError | None:
    """The report of the run over `shards`, a decoding error, or None when it must run in one process."""
    if any(isinstance(s.evaluator, LLMJudge) for s in selection):
        return None
    jobs = [ShardJob(files, spec, dataset_path) for files in shards]
    try:
        with ProcessPoolExecutor(max_workers=len(jobs) - 1, mp_context=get_context("spawn")) as pool:
            pending = [pool.submit(evaluate_shard, job) for job in jobs[1:]]
            results = [evaluate_shard(jobs[0]), *(f.result() for f in pending)]
    except BrokenProcessPool:
        return None
    for result in results:
        if result.error is not None:
            return _DecodeError(result.error)
    seen: set[str] = set()
    for result in results:
        if result.stray_logs or not seen.isdisjoint(result.trace_ids):
            return None  # a trace (or its logs) split between shards
        seen.update(result.trace_ids)
    return _report(results, selection, dataset, worst, signature_rules)


class _DecodeError(TraceDecodeError):
    """A shard's TraceDecodeError, as its message (the exception does not cross processes)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def _report(
    results: list[ShardResult],
    selection: Sequence[Selected],
    dataset: Dataset | None,
    worst: int,
    signature_rules: Sequence[SignatureRule],
) -> OfflineReport:
    by_label: dict[str, list[Result]] = {s.label: [] for s in selection}
    for result in results:
        for label, outcomes in result.by_label.items():
            by_label[label].extend(outcomes)
    sessions = (
        sessions_of_turns([t for r in results for t in r.turns])
        if any(is_session_level(s) for s in selection)
        else None
    )
    session_count, by_session = evaluate_sessions(sessions, selection)
    for label, records in by_session.items():
        by_label[label].extend(records)
    matched = {how: sum(r.matched.get(how, 0) for r in results) for how in ("task_id", "input", "unmatched")}
    used: set[str] = set().union(*(r.tasks_used for r in results))
    return build_report(
        selection,
        by_label,
        mode="experiment" if dataset is not None else "monitor",
        trace_count=sum(len(r.trace_ids) for r in results),
        dataset=dataset,
        matched=matched,
        tasks_used=len(used),
        worst=worst,
        signature_rules=signature_rules,
        spend=spend_summary([c for r in results for c in r.costs]),
        session_count=session_count,
    )
