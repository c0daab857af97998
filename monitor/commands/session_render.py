"""`agent-monitor review --level session` and `--session ID`: conversations as text. Every value that may come
from a trace goes through `clip` (one line, control characters and escape sequences neutralised, bounded)."""

from __future__ import annotations

from monitor.commands.review_render import table, when
from monitor.review.session_models import SessionDetail, SessionsPage, SessionVerdict, SessionVerdictBrief
from monitor.text import clip, clip_at_boundary, shown, usd

MESSAGE_WIDTH = 400  # of a turn's message in the conversation view
EXPLANATION_WIDTH = 200


def _verdicts(item_verdicts: list[SessionVerdictBrief]) -> str:
    return (
        ", ".join(f"{clip(v.evaluator, 40)}:{v.outcome}" + (f"@{v.turn}" if v.turn else "") for v in item_verdicts)
        or "-"
    )


def sessions_table(page: SessionsPage) -> str:
    """One row per conversation: when it completed, its id, service, turns, how it ended, its session-level
    results (evaluator:outcome@turn) and its turns' trace ids in order."""
    if not page.items:
        return "no conversations match\n"
    rows = [
        [
            when(s.completed_at),
            clip(s.session_id, 60),
            clip(s.service, 30),
            str(s.turn_count),
            s.ended,
            _verdicts(s.verdicts),
            " ".join(clip(trace_id, 64) for trace_id in s.trace_ids) or "-",
        ]
        for s in page.items
    ]
    text = table(["COMPLETED", "SESSION", "SERVICE", "TURNS", "ENDED", "RESULTS", "TRACES"], rows)
    if page.next_cursor:
        text += "(more: narrow the range, or read the API's next_cursor with --json)\n"
    return text


def _verdict_line(v: SessionVerdict, indent: str) -> str:
    score = f" {v.score:.2f}" if v.score is not None else ""
    reason = f" ({clip(v.skip_reason, 40)})" if v.skip_reason else ""
    explanation = clip_at_boundary(v.explanation, EXPLANATION_WIDTH)
    return f"{indent}[{v.outcome}] {clip(v.evaluator, 60)}{score}{reason}" + (f": {explanation}" if explanation else "")


def session_view(detail: SessionDetail) -> str:
    """The conversation turn by turn (the user's message, the agent's answer, tools and errors), each turn's
    verdicts under it and the verdicts on the whole conversation first."""
    s = detail.session
    cost = usd(s.cost_usd) if s.cost_usd is not None else "unpriced"
    cut = f" ({s.turns_cut} cut)" if s.turns_cut else ""
    lines = [
        f"session {clip(s.session_id, 200)}  service {clip(s.service, 60)}  id from {clip(s.source, 60)}",
        f"started {when(s.started_at)}  completed {when(s.completed_at)}  ended {s.ended}",
        f"turns {s.turn_count}{cut}  tokens {s.total_tokens}  spend {cost}  failing results {s.failed}",
    ]
    numbers = {t.turn for t in detail.turns}
    by_trace = {t.trace_id: t.turn for t in detail.turns}
    beside: dict[int, list[SessionVerdict]] = {}
    overall: list[SessionVerdict] = []
    for v in detail.results:
        turn = v.turn if v.turn in numbers else by_trace.get(v.turn_trace_id or "")
        (overall if turn is None else beside.setdefault(turn, [])).append(v)
    if overall:
        lines += ["", "conversation:", *(_verdict_line(v, "  ") for v in overall)]
    for t in detail.turns:
        lines += ["", f"turn {t.turn}  trace {clip(t.trace_id, 64)}  {when(t.started_at)}"]
        lines.append(f"  user:  {shown(t.user_message, MESSAGE_WIDTH)}")
        if t.tool_calls:
            lines.append(f"  tools: {clip(', '.join(t.tool_calls), MESSAGE_WIDTH)}")
        for e in t.errors:
            lines.append(f"  error: {clip(e.kind, 20)} {clip(e.name, 60)}: {clip(e.message, 200)}")
        lines.append(f"  agent: {shown(t.answer, MESSAGE_WIDTH)}")
        lines += [_verdict_line(v, "  ") for v in beside.get(t.turn, [])]
    return "\n".join(lines) + "\n"
