"""`AgentEvalNewFailureSignature`: a failure signature counted new (`agent_eval_failure_signatures_new_total`,
by evaluator and service; the store counts a signature new once, when it reaches `signatures.min_count` results
within `signatures.window`) fires it, for `for` and then the window, with a link to the signatures of its evaluator
and service over that range.

`increase()` only sees growth after Prometheus has seen a series once, and the first new signature of an
(evaluator, service) on a daemon is usually the one that creates its series, at 1. So a series first seen within
the range counts with its whole value: it has no sample over the range before (a replica's restart leaves the
older series, and `increase()` counts the growth past the reset; a counter that comes back at 0 counts nothing).
That arm needs Prometheus to have scraped the job a range ago: a fresh Prometheus (or a new scrape config) meets
old counters of a long-running daemon and must not take them for new.
"""

from __future__ import annotations

from monitor.config import NewSignaturesAlertConfig, SignaturesConfig

from .context import Rule, RuleContext
from .promql import BY, duration, select, string

ALERT = "AgentEvalNewFailureSignature"
NEW_TOTAL = "agent_eval_failure_signatures_new_total"


def new_signature_expr(window: float, selector: str = "", job: str = "agent-monitor") -> str:
    """New signatures per (evaluator, service) over `window` seconds, when there are any."""
    w = duration(window)
    new = select(NEW_TOTAL, extra=selector)
    up = select("up", f"job={string(job)}", extra=selector)
    return (
        f"{BY} (\n"
        f"  (\n    {new}\n    unless\n    last_over_time({new}[{w}] offset {w})\n  )\n"
        f"  and on ()\n  count({up} offset {w})\n"
        f"  or\n  increase({new}[{w}])\n"
        ") > 0\n"
    )


def new_signature_alert(alert: NewSignaturesAlertConfig, signatures: SignaturesConfig, context: RuleContext) -> Rule:
    # The range outlasts `for` by the window, so a new signature fires after `for` and resolves a window later.
    window = signatures.window + alert.for_
    w, w0 = duration(window), duration(signatures.window)
    each = "" if signatures.min_count == 1 else f" (each with {signatures.min_count} results within {w0} of its first)"
    return context.alert(
        ALERT,
        new_signature_expr(window, context.selector, context.job),
        severity=alert.severity,
        for_seconds=alert.for_,
        by_evaluator=True,
        window=window,
        annotations={
            "summary": "New failure mode of {{ $labels.evaluator }} on {{ $labels.service }}",
            "description": "{{ $value | humanize }} new failure signatures of evaluator {{ $labels.evaluator }} on "
            f"service {{{{ $labels.service }}}} over the last {w}{each}: the agent fails in a way it did not before.",
        },
    )


def signature_rules(
    alert: NewSignaturesAlertConfig | None, signatures: SignaturesConfig, context: RuleContext
) -> list[Rule]:
    """The new-failure-signature alert, or none when it is off."""
    return [] if alert is None else [new_signature_alert(alert, signatures, context)]
