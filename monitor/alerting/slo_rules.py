"""`AgentEvalErrorBudgetBurn`: the multi-window, multi-burn-rate alerts of the SRE workbook ("Alerting on SLOs")
for an evaluator with an `slo:` block, and the recording rules they read.

The error ratio is failing results among pass and fail verdicts (skips are not counted). The error budget is
1 - objective over `period`. Each alert fires while the error ratio over both its long and its short window
exceeds factor × budget, where factor = budget_fraction × period / long_window: burning at that rate spends
`budget_fraction` of the period's budget within the long window (14.4, 6, 3 and 1 for a 30-day period).
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.config import SloConfig

from .context import Rule, RuleContext, group, record
from .promql import BY, FAILS, VERDICTS, complement, duration, number, results, select, string

ALERT = "AgentEvalErrorBudgetBurn"
ERROR_RATIO = "agent_eval:error_ratio:rate{window}"
OBJECTIVE = "agent_eval:slo_objective"
BUDGET_REMAINING = "agent_eval:slo_error_budget_remaining"


@dataclass(frozen=True, slots=True)
class BurnWindow:
    """One alert of the four: windows in seconds, the share of the budget it lets burn, its default severity."""

    long: float
    short: float
    budget_fraction: float
    severity: str  # "critical" pages, "warning" opens a ticket

    def factor(self, period: float) -> float:
        """The burn-rate threshold: budget_fraction × period / long window."""
        return self.budget_fraction * period / self.long


HOUR = 3600.0
BURN_WINDOWS = (
    BurnWindow(HOUR, 5 * 60.0, 0.02, "critical"),
    BurnWindow(6 * HOUR, 30 * 60.0, 0.05, "critical"),
    BurnWindow(24 * HOUR, 2 * HOUR, 0.10, "warning"),
    BurnWindow(72 * HOUR, 6 * HOUR, 0.10, "warning"),
)
RATE_WINDOWS = tuple(sorted({w for burn in BURN_WINDOWS for w in (burn.long, burn.short)}))


def error_ratio_name(window: float) -> str:
    """agent_eval:error_ratio:rate5m, ...: the recorded error ratio over `window` seconds."""
    return ERROR_RATIO.format(window=duration(window))


def error_ratio_expr(evaluator: str, window: float, selector: str = "") -> str:
    """Failing share of the verdicts over `window`, 0 (not absent) while the evaluator has never failed."""
    w = duration(window)
    fails = f"{BY} (rate({results(evaluator, FAILS, selector)}[{w}]))"
    verdicts = f"{BY} (rate({results(evaluator, VERDICTS, selector)}[{w}]))"
    return f"(\n  {fails}\n  or\n  0 * {verdicts}\n)\n/\n{verdicts}\n"


def burn_alert(evaluator: str, slo: SloConfig, burn: BurnWindow, context: RuleContext) -> Rule:
    budget = complement(slo.objective)
    factor = number(burn.factor(slo.period))
    long, short = duration(burn.long), duration(burn.short)
    matcher = f"evaluator={string(evaluator)}"
    expr = (
        f"{select(error_ratio_name(burn.long), matcher)} > {factor} * {budget}\n"
        f"and\n{select(error_ratio_name(burn.short), matcher)} > {factor} * {budget}\n"
    )
    severity = slo.severity or burn.severity
    kind = "page" if burn.severity == "critical" else "ticket"
    return context.alert(
        ALERT,
        expr,
        severity=severity,
        labels={"long_window": long, "short_window": short},
        evaluator=evaluator,
        window=burn.long,
        annotations={
            "summary": f"{{{{ $labels.evaluator }}}} is burning its error budget over {factor}x the sustainable rate "
            f"({long}/{short} windows, {kind})",
            "description": "{{ $value | humanizePercentage }} of the {{ $labels.evaluator }} results of service "
            f"{{{{ $labels.service }}}} failed over the last {long} (and over the last {short}): more than {factor} "
            f"times the {number(float(budget) * 100)}% error budget of its {number(slo.objective * 100)}% objective "
            f"over {duration(slo.period)}. At this rate {number(burn.budget_fraction * 100)}% of the budget is "
            f"spent within {long}.",
        },
    )


def slo_group(evaluator: str, slo: SloConfig, context: RuleContext, interval: float) -> dict:
    """The group of one evaluator's SLO: error ratios per window, objective, budget left, the four alerts."""
    windows = sorted({*RATE_WINDOWS, slo.period})
    own = {"evaluator": evaluator}  # on the series already; as a rule label it keeps rules of one name distinct
    rules = [record(error_ratio_name(w), error_ratio_expr(evaluator, w, context.selector), own) for w in windows]
    rules.append(record(OBJECTIVE, f"vector({number(slo.objective)})", own))
    period_ratio = select(error_ratio_name(slo.period), f"evaluator={string(evaluator)}")
    rules.append(record(BUDGET_REMAINING, f"1 - {period_ratio} / {complement(slo.objective)}", own))
    rules += [burn_alert(evaluator, slo, burn, context) for burn in BURN_WINDOWS]
    return group(f"agent-monitor.slo.{evaluator}", interval, rules)


def slo_groups(slos: list[tuple[str, SloConfig]], context: RuleContext, interval: float) -> list[dict]:
    """One group per (evaluator label, SLO), sorted by label."""
    return [slo_group(label, slo, context, interval) for label, slo in sorted(slos, key=lambda item: item[0])]
