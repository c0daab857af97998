"""Text tables of failure signatures (`agent-monitor review --by signature`, `agent-monitor signatures`); every
text from traces goes through `clip` (one line, control characters and escape sequences neutralised)."""

from __future__ import annotations

from monitor.commands.review_render import table, when
from monitor.review.signature_models import SignatureDetail, SignatureItem, SignaturesPage
from monitor.text import clip

TEMPLATE_WIDTH = 70
SPARK = " ▁▂▃▄▅▆▇█"


def spark(trend: list[int]) -> str:
    """The trend as one line of block characters, scaled to its busiest point."""
    peak = max(trend, default=0)
    return "".join(SPARK[0 if n == 0 else max(1, round(n / peak * (len(SPARK) - 1)))] for n in trend)


def _growth(item: SignatureItem) -> str:
    if item.growth is None:
        return "new" if item.results else ""
    return f"{item.growth * 100:+.0f}%"


def _where(item: SignatureItem) -> str:
    return clip(",".join([*item.services[:3], *item.versions[:3]]), 40)


def signatures_table(page: SignaturesPage) -> str:
    if not page.items:
        return f"no failures from {when(page.since)} to {when(page.until)}\n"
    rows = [
        [
            item.id,
            item.status,
            str(item.results),
            _growth(item),
            str(item.traces),
            spark(item.trend),
            clip(item.evaluator, 30),
            clip(f"{item.step_kind} {item.step_name}".strip(), 30),
            clip(item.error_type, 20),
            when(item.last_seen),
            _where(item),
            clip(item.template, TEMPLATE_WIDTH),
        ]
        for item in page.items
    ]
    headers = ("SIGNATURE", "STATUS", "RESULTS", "GROWTH", "TRACES", "TREND", "EVALUATOR", "STEP", "ERROR")
    text = table((*headers, "LAST SEEN", "WHERE", "TEMPLATE"), rows)
    more = "more: pass --json to get next_cursor\n" if page.next_cursor else ""
    return f"failures from {when(page.since)} to {when(page.until)}, by impact\n{text}{more}"


def signature_view(detail: SignatureDetail) -> str:
    item = detail.signature
    lines = [
        f"signature {item.id} ({item.status}): {clip(item.template, 400)}",
        f"  {item.evaluator} · {item.step_kind} {item.step_name} · {item.error_type} · {item.results} results in "
        f"{item.traces} traces over the range, {item.count} in all",
        f"  first seen {when(item.first_seen)}, last seen {when(item.last_seen)}; trend {spark(item.trend)}",
        f"  example: {clip(item.example, 400)}",
        "",
    ]
    rows = []
    for trace in detail.traces:
        for i, verdict in enumerate(trace.verdicts):
            mark = "*" if verdict.signature == item.id else ""
            first = (
                [when(trace.evaluated_at), trace.trace_id, clip(trace.service or "", 20)] if i == 0 else ["", "", ""]
            )
            rows.append([*first, mark + clip(verdict.evaluator, 30), clip(verdict.explanation or "", 80)])
    text = table(("TIME", "TRACE", "SERVICE", "EVALUATOR", "EXPLANATION"), rows) if rows else "no trace in the range\n"
    return "\n".join(lines) + text
