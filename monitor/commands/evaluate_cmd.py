"""`agent-monitor evaluate FILE...`: run evaluators over saved traces and summarize, for CI and experiments.

Exit status: 0 when every `min_pass_rate` gate of the spec holds (or none is set), 1 when one is missed,
2 on bad input (unreadable trace files, spec or dataset).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from pydantic import ValidationError

from evaluators.sdk import Dataset, EvaluationRecord
from evaluators.signatures import SignatureRule
from evaluators.traces import TraceDecodeError, load_traces
from monitor.engine.gc_tuning import tune_gc
from monitor.offline.evaluation import OfflineReport, evaluate_offline, read_dataset
from monitor.offline.judges import stderr_progress
from monitor.offline.session_records import session_of_record
from monitor.offline.signatures import render_groups
from monitor.offline.spec import InputError, Selected, pricing_overrides, selection_and_judges, signature_rules
from monitor.offline.spend import spend_line
from monitor.text import clip

EXPLANATION_WIDTH = 100
SESSION_TRACES = 5  # turns' trace ids a session's line names


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="run evaluators over trace files and summarize the results",
        description="Evaluate saved OTLP traces offline. Without --dataset: monitor mode (evaluators that need "
        "ground truth are skipped). With --dataset: experiment mode, each trace matched to its task by a "
        "task.id / task_id / baggage.task.id attribute on its root span, else by identical input text. "
        "The report ends with what the traces cost (USD per trace: mean, p50, p95, and the total; priced from the "
        "genai-prices table and the spec's pricing: section). "
        "Exit status 0 when every min_pass_rate in the spec is met, 1 when one is missed, 2 on bad input.",
    )
    parser.add_argument("paths", nargs="+", metavar="FILE", help="trace files or directories")
    parser.add_argument(
        "--evaluators", dest="spec", metavar="SPEC", help="YAML evaluator spec (default: every rule-based builtin)"
    )
    parser.add_argument("--dataset", metavar="TASKS", help="tasks with ground truth (.json or .csv)")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    parser.add_argument("--worst", type=_count, default=10, metavar="N", help="show the N worst results (default 10)")
    parser.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N|auto",
        help="processes that decode and evaluate the files, each its share of them (default auto: the usable "
        "cores, up to 8, when the files hold 2 MiB or more; 1: in this process only). The output is the same",
    )
    parser.set_defaults(handler=run)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _workers(text: str) -> int | None:
    if text == "auto":
        return None
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more (or auto), got {value}")
    return value


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        prices = pricing_overrides(args.spec)
        selection, judges = selection_and_judges(args.spec, prices)
        rules = signature_rules(args.spec)
        dataset = read_dataset(args.dataset) if args.dataset else None
        report = _sharded(args, selection, dataset, rules)
        if report is None:
            tune_gc()  # every trace is held in memory: untuned, the collector re-walks them all again and again
        traces = load_traces(args.paths) if report is None else []
    except (InputError, TraceDecodeError) as exc:
        print(f"agent-monitor evaluate: {exc}", file=err)
        return 2
    except ValidationError as exc:
        print(f"agent-monitor evaluate: {args.spec}: invalid judges section: {exc}", file=err)
        return 2
    if report is None and traces:
        report = evaluate_offline(
            traces,
            selection,
            dataset,
            worst=args.worst,
            judges=judges,
            progress=stderr_progress(err),
            signature_rules=rules,
            prices=prices,
        )
    for trace in traces:
        trace.release()  # its views' cycles broken: freed at once, not by a collection walking every trace
    del traces
    if report is None or not report.trace_count:
        print(f"agent-monitor evaluate: no spans found in {', '.join(args.paths)}", file=err)
        return 2
    if args.format == "json":
        json.dump(report.to_dict(), out, indent=2, ensure_ascii=False, default=str)
        out.write("\n")
    else:
        out.write(render_table(report))
    return report.exit_code


def _sharded(
    args: argparse.Namespace, selection: list[Selected], dataset: Dataset | None, rules: Sequence[SignatureRule]
) -> OfflineReport | None:
    """The report of a run over several processes; None when the run stays in this one (`monitor.offline.parallel`)."""
    workers = getattr(args, "workers", None)
    if workers == 1:
        return None
    from monitor.offline.parallel import run_sharded, shard_plan

    shards = shard_plan(args.paths, workers)
    if shards is None:
        return None
    found = run_sharded(shards, args.spec, dataset, args.dataset, selection, worst=args.worst, signature_rules=rules)
    if isinstance(found, TraceDecodeError):
        raise found
    return found


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _header(report: OfflineReport) -> list[str]:
    traces = f"{report.trace_count} trace{'' if report.trace_count == 1 else 's'}"
    if report.session_count is not None:
        traces += f" in {report.session_count} session{'' if report.session_count == 1 else 's'}"
    if report.dataset is None:
        return [f"monitor mode (no dataset): {traces}; evaluators needing ground truth are skipped"]
    m = report.matched
    return [
        f"experiment mode: {traces}, dataset {clip(report.dataset, 40)!r} with {report.task_count} tasks",
        f"matched {m.get('task_id', 0)} by task id, {m.get('input', 0)} by input text, "
        f"{m.get('unmatched', 0)} unmatched; {report.tasks_without_trace} tasks without a trace",
    ]


def _rows(report: OfflineReport) -> list[list[str]]:
    rows = [["evaluator", "level", "total", "scored", "mean", "pass", "p50", "p95", "thresh", "min_pass", "skipped"]]
    for e in report.evaluators:
        s = e.summary
        skips = ", ".join(f"{reason}={n}" for reason, n in s.skip_counts.items()) or "-"
        gate = "-" if e.min_pass_rate is None else f"{e.min_pass_rate:.3f}{' FAIL' if e.gate == 'fail' else ''}"
        rows.append(
            [
                clip(e.label, 32),
                e.level,
                str(s.total),
                str(s.count),
                _num(s.mean),
                _num(s.pass_rate),
                _num(s.p50),
                _num(s.p95),
                _num(e.threshold),
                gate,
                skips,
            ]
        )
    return rows


def _subject(record: EvaluationRecord) -> str:
    """ "trace <id>", or for a session-level result "session <id> (traces a, b, c)": its turns in order."""
    session = session_of_record(record)
    if session is None:
        return f"trace {record.trace_id}"
    session_id, trace_ids = session
    more = f", +{len(trace_ids) - SESSION_TRACES}" if len(trace_ids) > SESSION_TRACES else ""
    return f"session {clip(session_id, 40)} (traces {', '.join(trace_ids[:SESSION_TRACES])}{more})"


def render_table(report: OfflineReport) -> str:
    """The report as text: header, one row per evaluator, the worst results, the gate verdict."""
    lines = [*_header(report), ""]
    rows = _rows(report)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) if i < 2 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    if report.worst:
        lines += ["", f"worst {len(report.worst)}:"]
        label_width = max(len(clip(r.evaluator, 32)) for r in report.worst)
        for r in report.worst:
            verdict = "FAIL" if r.passed is False else "pass"
            where = f" agent={clip(r.agent_name, 30)}" if r.agent_name else ""
            where += f" span={r.span_id}" if r.level == "llm" and r.span_id else ""
            lines.append(
                f"  {_num(r.score)} {verdict}  {clip(r.evaluator, 32).ljust(label_width)}  {_subject(r)}{where}  "
                f"{clip(r.explanation, EXPLANATION_WIDTH)}"
            )
    lines += render_groups(report.signatures)
    lines += ["", spend_line(report.spend)]
    if report.judge_spend:
        lines += ["", "judge spend:"]
        for label, spend in report.judge_spend.items():
            unpriced = f", {spend.unpriced} unpriced" if spend.unpriced else ""
            lines.append(
                f"  {clip(label, 32)}  {spend.model}: {spend.requests} requests ({spend.failed} failed, "
                f"{spend.cached} cached), {spend.input_tokens} input + {spend.output_tokens} output tokens, "
                f"${spend.cost_usd:.6f}{unpriced}"
            )
    lines.append("")
    failed = report.failed_gates
    for e in failed:
        rate = e.summary.pass_rate
        why = "nothing scored" if rate is None else f"pass rate {rate:.3f} <"
        lines.append(f"FAILED {clip(e.label, 32)}: {why} min_pass_rate {e.min_pass_rate:.3f}")
    gated = sum(1 for e in report.evaluators if e.min_pass_rate is not None)
    if not failed:
        lines.append(f"OK: {gated} gate{'' if gated == 1 else 's'} met" if gated else "OK (no min_pass_rate gates)")
    return "\n".join(lines) + "\n"
