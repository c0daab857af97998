"""`agent-monitor review`'s text output: aligned tables and the step tree of a trace. Every value that may come
from a trace goes through `clip` (one line, control characters and escape sequences neutralised, bounded)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from monitor.review.models import Breakdown, EvaluatorStatus, ResultItem, ResultsPage, Step, TraceDetail
from monitor.text import clip, clip_at_boundary, shown, usd

EXPLANATION_WIDTH = 80  # of the results table; cut at a boundary (`clip_at_boundary`)
FULL_EXPLANATION = 4000  # of the trace view, which shows an explanation whole (up to this bound)


def when(stamp: float | None) -> str:
    """Unix seconds as an RFC 3339 UTC time to the second."""
    if stamp is None:
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _spend(value: float | None, unpriced: int) -> str:
    """A spend with the calls left out of it: `$0.001200`, `$0.001200 + 2 unpriced`, `unpriced (2)`."""
    if value is None:
        return f"unpriced ({unpriced})" if unpriced else "-"
    return usd(value) + (f" + {unpriced} unpriced" if unpriced else "")


def _duration(seconds: float | None) -> str:
    """300 → 5m, 3600 → 1h, 90 → 90s."""
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell (the last one is not padded)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = []
    for row in (headers, *rows):
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _explanation(item: ResultItem, width: int = EXPLANATION_WIDTH) -> str:
    """The explanation, cut at a boundary (never inside a JSON value) past `width`; a skip's reason first."""
    text = clip_at_boundary(item.explanation, width)
    if item.skip_reason:
        reason = f"skipped: {clip(item.skip_reason, 40)}"
        return f"{reason} - {text}" if text else reason
    return text


def results_table(page: ResultsPage) -> str:
    """One row per result, newest first (the API's order)."""
    if not page.items:
        return "no results\n"
    headers = ["TIME", "EVALUATOR", "OUTCOME", "SCORE", "SERVICE", "AGENT", "TRACE", "EXPLANATION"]
    rows = [
        [
            when(i.evaluated_at),
            clip(i.evaluator, 40),
            i.outcome,
            _number(i.score),
            clip(i.service, 30) or "-",
            clip(i.agent, 30) or "-",
            clip(i.trace_id, 32),
            _explanation(i),
        ]
        for i in page.items
    ]
    if any(i.variant for i in page.items):  # a VARIANT column only when there is one to show
        headers.insert(5, "VARIANT")
        for row, i in zip(rows, page.items, strict=True):
            row.insert(5, clip(i.variant, 30) or "-")
    text = table(headers, rows)
    if page.next_cursor:
        text += f"({len(page.items)} shown; more match: raise --limit (up to 500) or narrow --since/--until)\n"
    return text


def _step_label(step: Step, width: int, unpriced: bool = False) -> str:
    """One step's line; `unpriced`: the trace has unpriced calls (a call with usage and no cost is one of them;
    in a trace stored before spend was kept, no call has a cost and none is called unpriced)."""
    duration = f"{step.duration_ms:.0f}ms"
    error = f"  ERROR {clip(step.error, width)}" if step.error else ""
    name = clip(step.name, 60)
    text = clip(step.text, width)
    if step.kind == "llm":
        tokens = f"{step.input_tokens}→{step.output_tokens} tok" if step.input_tokens is not None else "no usage"
        if step.cost_usd is not None:
            tokens += f"  {usd(step.cost_usd)} ({step.cost_source})"
        elif unpriced and step.input_tokens is not None:
            tokens += "  unpriced"
        said = f'  "{text}"' if text else ""
        return f"llm {clip(step.model, 60) or name}  {tokens}  {duration}{said}{error}"
    if step.kind in ("tool", "retrieval"):
        shown = f"  {text}" if text else ""
        return f"{step.kind} {name}{shown}  {duration}{error}"
    if step.kind in ("agent", "handoff"):
        return f"{step.kind} {name}  {duration}{error}"
    return f"{name}  {duration}{error}"


def trace_view(detail: TraceDetail, width: int = EXPLANATION_WIDTH) -> str:
    """The summary, the step tree indented as `agent-monitor inspect` prints it, then every result."""
    s = detail.summary
    lines = [
        f"trace {clip(s.trace_id, 32)}  service={clip(s.service, 40) or '?'}"
        f"{f'  variant={clip(s.variant, 40)}' if s.variant else ''}  spans={s.span_count}  "
        f"{s.duration_ms:.0f}ms  evaluated {when(s.evaluated_at)}  errors={'yes' if s.has_errors else 'no'}",
        f"  input:  {shown(s.input, width)}",
        f"  output: {shown(s.output, width)}",
    ]
    if s.input_source:  # which rule chose the input
        lines.insert(2, f"  input from: {clip(s.input_source, 80)}")
    if detail.session_id is not None:
        lines.append(f"  session: {clip(detail.session_id, 120)}")
    if s.agents:
        lines.append(f"  agents: {', '.join(clip(a, 40) for a in s.agents)}")
    for usage in s.models:
        lines.append(
            f"  model:  {clip(usage.model, 60)}  {usage.calls} calls  "
            + (f"{usage.input_tokens}→{usage.output_tokens} tok" if usage.input_tokens is not None else "no usage")
            + f"  {_spend(usage.cost_usd, usage.unpriced_calls)}"
        )
    if s.cost_usd is not None or s.unpriced_calls:
        lines.append(f"  spend:  {_spend(s.cost_usd, s.unpriced_calls)}")
    if s.tools:
        lines.append(f"  tools:  {', '.join(clip(t, 40) for t in s.tools)}")
    for error in s.errors:
        lines.append(f"  error:  {error.kind} {clip(error.name, 40)}: {clip(error.error, width)}")
    unpriced = s.unpriced_calls > 0
    lines += ["  " + "   " * step.depth + "└─ " + _step_label(step, width, unpriced) for step in detail.steps]
    if s.steps_truncated:
        lines.append("  (the step list was cut at the store's size cap)")
    lines.append("")
    if not detail.results:
        lines.append("no stored results")
        return "\n".join(lines) + "\n"
    headers = ("EVALUATOR", "LEVEL", "OUTCOME", "SCORE", "AGENT", "MODEL", "EXPLANATION")
    rows = [
        (
            clip(r.evaluator, 40),
            clip(r.level, 8),
            r.outcome,
            _number(r.score),
            clip(r.agent, 30) or "-",
            clip(r.model, 30) or "-",
            _explanation(r, FULL_EXPLANATION),  # the whole explanation: the table's are cut
        )
        for r in detail.results
    ]
    return "\n".join(lines) + "\n" + table(headers, rows) + _reviews_view(detail.results, width)


def _reviews_view(results: Sequence[ResultItem], width: int) -> str:
    """Each verdict's review in force (agree or disagree, by whom and when, the correction and the note); nothing
    when no verdict of the trace is reviewed."""
    reviewed = [r for r in results if r.review is not None]
    if not reviewed:
        return ""
    lines = ["", f"reviews: {len(reviewed)} of {len(results)} verdicts reviewed"]
    for r in reviewed:
        review = r.review
        assert review is not None  # filtered above
        meaning = ""
        if review.agreement == "disagree":
            meaning = " (false alarm)" if r.outcome == "fail" else " (miss)" if r.outcome == "pass" else ""
        where = f"{clip(r.evaluator, 40)} ({clip(r.level, 8)}{f' {clip(r.span_id, 16)}' if r.span_id else ''})"
        by = f"by {clip(review.reviewer, 60)} {when(review.created_at)}"
        line = f"  {where} {r.outcome}: {review.agreement}{meaning} {by}"
        if review.corrected_score is not None:
            line += f"  corrected score {_number(review.corrected_score)}"
        if review.corrected_label:
            line += f"  corrected label {clip(review.corrected_label, 60)}"
        lines.append(line)
        if review.note:
            lines.append(f"    note: {clip(review.note, width * 4)}")
    return "\n".join(lines) + "\n"


def breakdown_table(breakdown: Breakdown) -> str:
    scope = f"evaluator {clip(breakdown.evaluator, 40)}" if breakdown.evaluator else "all evaluators"
    if breakdown.variant is not None:
        scope += f", variant {clip(breakdown.variant, 40) or '(none)'}"
    if breakdown.since is not None:
        span = f"from {when(breakdown.since)} to {when(breakdown.until) if breakdown.until is not None else 'now'}"
    else:
        span = f"until {when(breakdown.until)}" if breakdown.until is not None else "everything stored"
    order = ", most spend first" if breakdown.sort == "cost" else ""
    head = f"results by {breakdown.by} ({scope}, {span}{order})\n"
    if not breakdown.groups:
        return head + "no results\n"
    headers = [breakdown.by.upper(), "PASSED", "FAILED", "SKIPPED", "PASS RATIO"]
    rows = [
        [clip(g.value, 40) or "(none)", str(g.passed), str(g.failed), str(g.skipped), _number(g.pass_ratio, 3)]
        for g in breakdown.groups
    ]
    foot = ""
    if any(g.calls for g in breakdown.groups):  # spend columns when the stored traces have LLM calls
        headers += ["CALLS", "SPEND", "UNPRICED"]
        for row, g in zip(rows, breakdown.groups, strict=True):
            row += [str(g.calls), usd(g.cost_usd), str(g.unpriced_calls)]
        priced = [g.cost_usd for g in breakdown.groups if g.cost_usd is not None]
        if priced and breakdown.by != "tool":  # a trace's calls count once (a tool's groups overlap)
            calls = sum(g.calls for g in breakdown.groups)
            unpriced = sum(g.unpriced_calls for g in breakdown.groups)
            foot = f"total spend {usd(sum(priced))} over {calls} LLM calls ({unpriced} unpriced)\n"
    return head + table(headers, rows) + foot


def evaluators_table(infos: Sequence[EvaluatorStatus]) -> str:
    """Settings, alert and SLO, then `ratio (samples)` per metrics window."""
    if not infos:
        return "no evaluators configured\n"
    windows = list(dict.fromkeys(w.window for info in infos for w in info.windows))
    headers = (
        "EVALUATOR",
        "KIND",
        "LEVEL",
        "THRESHOLD",
        "SAMPLING",
        "ALERT",
        "STATE",
        "SLO",
        *(f"PASS {w}" for w in windows),
    )
    rows = []
    for info in infos:
        figures = {w.window: f"{_number(w.pass_ratio, 3)} ({w.samples})" for w in info.windows}
        alert = (
            f"< {info.alert_min_pass_ratio:g} over {_duration(info.alert_window)}"
            if info.alert_min_pass_ratio is not None
            else "-"
        )
        rows.append(
            (
                clip(info.name, 40),
                clip(info.kind, 12),
                clip(info.level, 8),
                _number(info.threshold),
                f"{info.sampling:g}",
                alert,
                info.alert_state or "-",
                f"{info.slo_objective:g}" if info.slo_objective is not None else "-",
                *(figures.get(w, "-") for w in windows),
            )
        )
    return table(headers, rows)
