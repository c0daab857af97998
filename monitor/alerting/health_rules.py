"""The daemon's own health alerts (`alerting.health`): receivers refusing spans, traces dropped, an evaluation
backlog, LLM judges that cannot judge, judges whose limits cannot keep up (judgements skipped as rate_limited),
a result store that fails (review unavailable), a polled source whose every run fails, and the scrape target
down or gone. All share `health.for` and `health.severity`.
"""

from __future__ import annotations

from typing import NamedTuple

from monitor.config import HealthAlertsConfig

from .context import Rule, RuleContext
from .promql import duration, number, select, string

HEALTH_WINDOW = 600.0  # the range of the rate/increase based health alerts
JUDGE_TROUBLE = 'reason=~"judge_unavailable|budget_exhausted"'
JUDGE_GOOD = 'status=~"ok|cached"'
JUDGE_CAPACITY = 'limit!~".*daily_token_budget"'  # a spent budget is AgentMonitorJudgeUnavailable's (budget_exhausted)


class Health(NamedTuple):
    expr: str
    summary: str
    description: str


def receivers_refusing(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    w = duration(HEALTH_WINDOW)
    refused = select("agent_monitor_spans_refused_total", extra=ctx.selector)
    offered = select("", '__name__=~"agent_monitor_spans_(received|refused)_total"', extra=ctx.selector)
    expr = (
        f"sum by (receiver) (rate({refused}[{w}]))\n/\nsum by (receiver) (rate({offered}[{w}]))\n"
        f"> {number(health.refused_ratio)}\n"
    )
    return Health(
        expr,
        "agent-monitor refuses spans on its {{ $labels.receiver }} receiver",
        "{{ $value | humanizePercentage }} of the spans sent to the {{ $labels.receiver }} receiver "
        f"were refused over the last {w} (limit {number(health.refused_ratio * 100)}%): throttled, too large, "
        "malformed or over a cap; see agent_monitor_spans_refused_total by reason.",
    )


def traces_dropped(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    # The range outlasts `for` by HEALTH_WINDOW, so a single drop fires after `for` (and resolves 10m later).
    w = duration(HEALTH_WINDOW + health.for_)
    dropped = select("agent_monitor_traces_dropped_total", extra=ctx.selector)
    expr = f"sum by (reason) (increase({dropped}[{w}])) > 0\n"
    return Health(
        expr,
        "agent-monitor dropped traces without evaluating them ({{ $labels.reason }})",
        f"{{{{ $value | humanize }}}} traces were dropped over the last {w} with reason "
        "{{ $labels.reason }} (evaluation_error, worker_crash, worker_stalled or shutdown_timeout): their "
        "results are missing from the metrics.",
    )


def evaluation_backlog(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    expr = f"{select('agent_monitor_queue_depth', extra=ctx.selector)} > {health.queue_depth}\n"
    return Health(
        expr,
        "agent-monitor evaluation is falling behind on {{ $labels.instance }}",
        "{{ $value | humanize }} completed traces are waiting for or in evaluation (more than "
        f"{health.queue_depth} for {duration(health.for_)}): add CPUs or workers, or lower sampling.",
    )


def judge_unavailable(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    w = duration(HEALTH_WINDOW)
    skips = select("agent_eval_skips_total", JUDGE_TROUBLE, extra=ctx.selector)
    requests = select("agent_monitor_judge_requests_total", JUDGE_GOOD.replace("=~", "!~"), extra=ctx.selector)
    expr = (
        f"sum by (evaluator, service, reason) (increase({skips}[{w}])) > 0\nor\n"
        f"sum by (judge, model, status) (increase({requests}[{w}])) > 0\n"
    )
    return Health(
        expr,
        "LLM judge {{ $labels.evaluator }}{{ $labels.judge }} cannot judge",
        "{{ $value | humanize }} judgements failed over the last "
        f"{w} ({{{{ $labels.reason }}}}{{{{ $labels.status }}}}) and kept failing for {duration(health.for_)}: "
        "no API key, the model API down or rate-limited, or the daily token budget spent. Those results are "
        "skips, not scores.",
    )


def judge_capacity(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    w = duration(HEALTH_WINDOW)
    skips = select("agent_monitor_judge_capacity_skips_total", JUDGE_CAPACITY, extra=ctx.selector)
    expr = f"sum by (judge, limit) (increase({skips}[{w}])) > {health.judge_capacity_skips}\n"
    return Health(
        expr,
        "LLM judge {{ $labels.judge }} skips judgements: {{ $labels.limit }} cannot keep up",
        "{{ $value | humanize }} judgements of {{ $labels.judge }} were skipped as rate_limited over the last "
        f"{w} (more than {health.judge_capacity_skips}, for {duration(health.for_)}): they waited for "
        "{{ $labels.limit }} past judges.judgement_timeout, or found the backlog (judges.max_pending) full. "
        "Raise {{ $labels.limit }} (judges.* in the judges section, params.* in the judge's own params; "
        "requests_per_minute within the model's quota), or lower the judges' sampling: requests a minute are "
        "about traces a minute x judges x samples x (1 + retries). agent_monitor_judge_waiting shows the backlog.",
    )


def review_unavailable(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    available = select("agent_monitor_review_available", extra=ctx.selector)
    return Health(
        f"{available} == 0\n",
        "agent-monitor's result store is failing on {{ $labels.instance }}: review unavailable",
        f"The result store has been failing for {duration(health.for_)} (see agent_monitor_store_errors_total by "
        "operation: open, write, prune or read): evaluation and metrics go on, but the review page, the review "
        "API and the failing-traces links lack what this replica evaluated.",
    )


def poll_failing(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    w = duration(HEALTH_WINDOW)
    failed = select("agent_monitor_poll_runs_total", 'status="error"', extra=ctx.selector)
    succeeded = select("agent_monitor_poll_runs_total", 'status="ok"', extra=ctx.selector)
    expr = f"sum by (source) (increase({failed}[{w}])) > 0\nunless\nsum by (source) (increase({succeeded}[{w}])) > 0\n"
    return Health(
        expr,
        "agent-monitor cannot poll the source {{ $labels.source }}",
        f"Every run of the polled source {{{{ $labels.source }}}} over the last {w} failed (see "
        "agent_monitor_poll_errors_total by kind: auth, client, server, timeout, connection, decode, checkpoint, "
        "lease): "
        "its traces are not being evaluated. The checkpoint stays where it was, so nothing is skipped once it works.",
    )


def monitor_down(health: HealthAlertsConfig, ctx: RuleContext) -> Health:
    up = select("up", f"job={string(ctx.job)}", extra=ctx.selector)
    expr = f"{up} == 0\nor\nabsent({up})\n"
    return Health(
        expr,
        "agent-monitor is down or not scraped (job {{ $labels.job }})",
        f"Prometheus could not scrape the job {{{{ $labels.job }}}} for {duration(health.for_)} "
        "({{ $labels.instance }}; no instance: no target at all): agent quality is not being measured.",
    )


HEALTH_ALERTS = {
    "AgentMonitorDown": monitor_down,
    "AgentMonitorEvaluationBacklog": evaluation_backlog,
    "AgentMonitorJudgeCapacity": judge_capacity,
    "AgentMonitorJudgeUnavailable": judge_unavailable,
    "AgentMonitorPollFailing": poll_failing,
    "AgentMonitorReceiversRefusing": receivers_refusing,
    "AgentMonitorReviewUnavailable": review_unavailable,
    "AgentMonitorTracesDropped": traces_dropped,
}


def health_rules(health: HealthAlertsConfig, ctx: RuleContext) -> list[Rule]:
    """The eight health alerts, by name (none when `health.enabled` is false)."""
    if not health.enabled:
        return []
    rules = []
    for name, build in sorted(HEALTH_ALERTS.items()):
        expr, summary, description = build(health, ctx)
        notes = {"summary": summary, "description": description}
        rules.append(ctx.alert(name, expr, severity=health.severity, for_seconds=health.for_, annotations=notes))
    return rules
