"""The `agent-monitor.spend` group: what the agents' LLM calls cost over the last hour, by service, agent and model
and by service, what a passing trace of each trace-level evaluator costs, and `AgentSpendOverBudget` when
`alerting.spend.max_usd_per_hour` is set.

The recording rules are always written (they record nothing while `agent_llm_cost_usd_total` has no series).
Names follow the Prometheus convention level:metric:operations (level: the labels the output keeps). Cost per
pass is the service's whole spend (failing and unjudged traces included) over the evaluator's passing traces in
the same hour: what a good answer costs. An hour without a passing trace gives no sample (not +Inf), and a
service without a priced call none either.
"""

from __future__ import annotations

from monitor.config import SpendAlertConfig

from .context import Rule, RuleContext, record
from .promql import RESULTS, duration, number, select

ALERT = "AgentSpendOverBudget"
COST = "agent_llm_cost_usd_total"
WINDOW = 3600.0  # the spend window: max_usd_per_hour is over the last hour
_W = duration(WINDOW)
SPEND_BY_MODEL = f"service_agent_model:agent_llm_cost_usd:increase{_W}"
SPEND = f"service:agent_llm_cost_usd:increase{_W}"
COST_PER_PASS = f"service_evaluator:agent_llm_cost_usd_per_pass:ratio_increase{_W}"
TRACE_PASSES = 'level="trace",outcome="pass"'


def spend_expr(by: str, selector: str = "") -> str:
    """USD spent over the spend window, summed by `by` (so the replicas add up)."""
    return f"sum by ({by}) (increase({select(COST, extra=selector)}[{_W}]))\n"


def cost_per_pass_expr(selector: str = "") -> str:
    """The service's spend ÷ each trace-level evaluator's passing traces over the window, where there were any."""
    passes = f"sum by (service, evaluator) (increase({select(RESULTS, TRACE_PASSES, extra=selector)}[{_W}]))"
    return f"{SPEND}\n/ on (service) group_right ()\n(\n  {passes}\n  > 0\n)\n"


def spend_alert(spend: SpendAlertConfig, budget: float, context: RuleContext) -> Rule:
    limit = number(budget)
    return context.alert(
        ALERT,
        f"{SPEND} > {limit}\n",
        severity=spend.severity,
        for_seconds=spend.for_,
        annotations={
            "summary": "{{ $labels.service }} spent "
            '{{ $value | printf "%.2f" }} USD on LLM calls in the last hour, over its budget of ' + f"{limit} USD",
            "description": "The LLM calls of service {{ $labels.service }} cost "
            '{{ $value | printf "%.4f" }} USD over the last '
            f"{_W}, more than alerting.spend.max_usd_per_hour ({limit} USD) for {duration(spend.for_)}. "
            f"{SPEND_BY_MODEL} (agent_llm_cost_usd_total by agent and model) says which agent and model spend it.",
        },
    )


def spend_rules(spend: SpendAlertConfig, context: RuleContext) -> list[Rule]:
    """The three recording rules, then the alert when `spend.max_usd_per_hour` is set."""
    rules = [
        record(SPEND_BY_MODEL, spend_expr("service, agent, model", context.selector)),
        record(SPEND, spend_expr("service", context.selector)),
        record(COST_PER_PASS, cost_per_pass_expr(context.selector)),
    ]
    if spend.max_usd_per_hour is not None:
        rules.append(spend_alert(spend, spend.max_usd_per_hour, context))
    return rules
