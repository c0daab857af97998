"""`AgentEvalVariantWorse`: one alerting rule per `variants.compare` entry, firing while the daemon's live
comparison says the candidate is significantly worse than the baseline (agent_eval_variant_verdict −1).

The verdict is computed in the daemon over the entry's window, with `min_samples` a side (below it the verdict
is 0), so the rule needs no window or sample count of its own. With several replicas each compares the traffic
it received; `min by` fires when any one of them finds the candidate worse.
"""

from __future__ import annotations

from urllib.parse import quote

from monitor.config import ComparisonConfig

from .context import Rule, RuleContext, template_text
from .promql import duration, select, string

ALERT = "AgentEvalVariantWorse"
FOR_SECONDS = 300.0  # the verdict must hold over a few scrapes: one noisy window does not page
PAIR = "evaluator, baseline, candidate"


def verdict_expr(entry: ComparisonConfig, selector: str = "") -> str:
    pair = (f"{name}={string(getattr(entry, name))}" for name in ("evaluator", "baseline", "candidate"))
    return f"min by ({PAIR}) ({select('agent_eval_variant_verdict', *pair, extra=selector)}) == -1\n"


def variant_alert(entry: ComparisonConfig, context: RuleContext) -> Rule:
    rule = context.alert(
        ALERT,
        verdict_expr(entry, context.selector),
        severity="warning",
        for_seconds=FOR_SECONDS,
        evaluator=entry.evaluator,
        window=entry.window,
        by_service=False,  # compared over every service
        labels={"baseline": template_text(entry.baseline), "candidate": template_text(entry.candidate)},
        annotations={
            "summary": "{{ $labels.candidate }} is worse than {{ $labels.baseline }} on {{ $labels.evaluator }}",
            "description": "The {{ $labels.evaluator }} results of variant {{ $labels.candidate }} are significantly "
            f"worse than those of {{{{ $labels.baseline }}}} over the last {duration(entry.window)} (at least "
            f"{entry.min_samples} results a side); agent_eval_variant_delta and its _lower/_upper bounds give the "
            "size of the drop.",
        },
    )
    notes = rule["annotations"]
    for link in ("failing_traces_url", "explain_url"):  # the candidate's own failing results
        if link in notes:
            url = notes[link]
            notes[link] = f"{url}{'&' if '?' in url else '?'}variant={quote(entry.candidate, safe='')}"
    return rule


def canary_rules(entries: list[ComparisonConfig], context: RuleContext) -> list[Rule]:
    """One rule per comparison, in configured order."""
    return [variant_alert(entry, context) for entry in entries]
