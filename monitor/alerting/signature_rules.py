"""`AgentEvalNewFailureSignature`: a failure signature counted new (by evaluator and service; the store counts a
signature new once, when it reaches `signatures.min_count` results within `signatures.window`) fires it, for `for`
and then the window, with a link to the signatures of its evaluator and service over that range.

The rule reads the daemon's gauge `agent_eval_failure_signatures_new_recent`: the signatures each replica counted
new over the alert's range (`for` + `signatures.window`, from the daemon's own config), summed over the replicas.
A gauge needs no scrape history: the first new signature of an (evaluator, service), which creates the counter's
series at 1 where `increase()` sees no growth, reads 1 at the first scrape of a Prometheus minutes old; an old
signature is out of the gauge's range, so a fresh Prometheus (or a restarted daemon) fires nothing for it.

Its other arm, `increase(agent_eval_failure_signatures_new_total[range])`, keeps firing through a daemon's restart
(the restarted process forgets its recent count; Prometheus remembers the counter's growth before it, and a counter
back at 0 counts nothing). The gauge's count comes first (`or`): it is exact where `increase()` extrapolates (rounded:
signatures are whole).
"""

from __future__ import annotations

from monitor.config import NewSignaturesAlertConfig, SignaturesConfig

from .context import Rule, RuleContext
from .promql import BY, duration, select

ALERT = "AgentEvalNewFailureSignature"
NEW_TOTAL = "agent_eval_failure_signatures_new_total"
NEW_RECENT = "agent_eval_failure_signatures_new_recent"


def new_signature_expr(window: float, selector: str = "") -> str:
    """New signatures per (evaluator, service) over `window` seconds, when there are any."""
    recent = select(NEW_RECENT, extra=selector)
    new = select(NEW_TOTAL, extra=selector)
    return f"{BY} ({recent}) > 0\nor\nround({BY} (increase({new}[{duration(window)}]))) > 0\n"


def new_signature_alert(alert: NewSignaturesAlertConfig, signatures: SignaturesConfig, context: RuleContext) -> Rule:
    # The range outlasts `for` by the window, so a new signature fires after `for` and resolves a window later.
    window = alert.range_of(signatures.window)
    w, w0 = duration(window), duration(signatures.window)
    each = "" if signatures.min_count == 1 else f" (each with {signatures.min_count} results within {w0} of its first)"
    return context.alert(
        ALERT,
        new_signature_expr(window, context.selector),
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
