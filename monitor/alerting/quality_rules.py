"""`AgentEvalPassRatioLow`: one alerting rule per evaluator with an `alert:` block.

The pass ratio over `window` comes from the results counter, summed by (evaluator, service) so the replicas
of a deployment add up. It is written as 1 - failing / verdicts: an evaluator that has never passed has no
`outcome="pass"` series, and must still alert. The rule only returns while the window holds at least
`min_samples` verdicts, so with fewer it resolves (unlike the in-process gauge, which keeps its state).
"""

from __future__ import annotations

from monitor.config import AlertConfig

from .context import Rule, RuleContext
from .promql import BY, FAILS, VERDICTS, duration, number, results

ALERT = "AgentEvalPassRatioLow"


def pass_ratio_expr(evaluator: str, alert: AlertConfig, selector: str = "") -> str:
    """The alert's PromQL: the pass ratio (its value) below the minimum, with at least min_samples verdicts."""
    window = duration(alert.window)
    fails = f"{BY} (increase({results(evaluator, FAILS, selector)}[{window}]))"
    verdicts = f"{BY} (increase({results(evaluator, VERDICTS, selector)}[{window}]))"
    return (
        f"1 - (\n  {fails}\n  /\n  {verdicts}\n) < {number(alert.min_pass_ratio)}\n"
        f"and\n{verdicts} >= {alert.min_samples}\n"
    )


# The evaluator's top factor (agent_eval_attribution: monitor/metrics/attribution.py), e.g. "model=gemini-2.5-pro
# (14× the passes)"; nothing while it has none (`%q` quotes the label values as PromQL strings).
def top_factor(selector: str = "") -> str:
    matchers = "evaluator=%q,service=%q" + (f",{selector}" if selector else "")
    query = f"topk(1, max by (dimension, value) (agent_eval_attribution{{{matchers}}}))"
    literal = '"' + query.replace("\\", "\\\\").replace('"', '\\"') + '"'  # a Go string, whatever the selector
    return (
        f"{{{{ with printf {literal} $labels.evaluator $labels.service | query }}}}{{{{ with first . }}}}"
        '{{ .Labels.dimension }}={{ .Labels.value }} ({{ .Value | printf "%.3g" }}× the passes){{ end }}{{ end }}'
    )


def pass_ratio_alert(evaluator: str, alert: AlertConfig, context: RuleContext) -> Rule:
    window = duration(alert.window)
    return context.alert(
        ALERT,
        pass_ratio_expr(evaluator, alert, context.selector),
        severity=alert.severity,
        for_seconds=alert.for_,
        evaluator=evaluator,
        window=alert.window,
        annotations={
            "summary": "{{ $labels.evaluator }} pass ratio is below "
            f"{number(alert.min_pass_ratio * 100)}% on {{{{ $labels.service }}}}",
            "description": "{{ $value | humanizePercentage }} of the {{ $labels.evaluator }} results of service "
            f"{{{{ $labels.service }}}} passed over the last {window} (at least {alert.min_samples} results), "
            f"below the minimum of {number(alert.min_pass_ratio * 100)}% for {duration(alert.for_)}.",
            "top_factor": top_factor(context.selector),
        },
    )


def quality_rules(alerts: list[tuple[str, AlertConfig]], context: RuleContext) -> list[Rule]:
    """One pass-ratio alert per (evaluator label, alert config), sorted by label."""
    return [pass_ratio_alert(label, alert, context) for label, alert in sorted(alerts, key=lambda item: item[0])]
