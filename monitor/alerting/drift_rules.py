"""The `agent-monitor.drift` group: `AgentQualityRegression` (a quality signal of an agent significantly worse than
its own baseline) and `AgentBehaviourDrift` (a behaviour signal changed either way), from the daemon's
`agent_quality_drift_active` (monitor/metrics/drift.py), for `drift.alerts.for`.

Every replica computes the same report from the shared store, so the rules take the `max` over the replicas by
(service, agent, signal, subject): two replicas make one alert. The annotations read the signal's baseline and
recent means, its baseline's kind, the change's direction and since when it is active with template
queries for the alert's own labels (`%q`: a label value is quoted as a PromQL string, whatever it holds), and link
to the Changes page of the agent and to the explanation of its recent window against the trailing one.
"""

from __future__ import annotations

from monitor.config import MonitorConfig

from .context import Rule, RuleContext, template_text
from .promql import duration, select, string

QUALITY_ALERT = "AgentQualityRegression"
BEHAVIOUR_ALERT = "AgentBehaviourDrift"
ACTIVE = "agent_quality_drift_active"
BASELINE = "agent_quality_baseline"
RECENT = "agent_quality_recent"
DRIFT = "agent_quality_drift"
SINCE = "agent_quality_drift_since_timestamp_seconds"
BY = "max by (service, agent, signal, subject)"
_OWN = "service=%q,agent=%q,signal=%q,subject=%q"  # the alert's signal, filled in by printf from its labels
_ARGS = "$labels.service $labels.agent $labels.signal $labels.subject"
CHANGES_PATH = "/review/changes?service={{ $labels.service | urlquery }}&agent={{ $labels.agent | urlquery }}"
EXPLAIN_PATH = "/review/explain?service={{ $labels.service | urlquery }}&agent={{ $labels.agent | urlquery }}"
WHAT = (
    "{{ $labels.signal }}{{ with $labels.subject }} ({{ . }}){{ end }} of "
    "{{ with $labels.agent }}agent {{ . }} on {{ end }}service {{ $labels.service }}"
)


def drift_expr(kind: str, selector: str = "") -> str:
    """The signals of `kind` active on any replica."""
    active = select(ACTIVE, f"kind={string(kind)}", extra=selector)
    return f"{BY} ({active}) == 1\n"


def read(query: str, then: str, selector: str = "") -> str:
    """A Go template that runs `query` (a PromQL expression whose `{OWN}` is the alert's signal's matchers) and
    renders its first sample with `then` (e.g. `value | printf "%.3g"`); nothing when it returns none."""
    matchers = _OWN + (f",{selector}" if selector else "")
    text = query.replace("{OWN}", "{" + matchers + "}")
    literal = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'  # a Go string, whatever the selector
    return f"{{{{ with printf {literal} {_ARGS} | query }}}}{{{{ . | first | {then} }}}}{{{{ end }}}}"


def drift_annotations(config: MonitorConfig, context: RuleContext, worse: bool) -> dict[str, str]:
    s = context.selector
    baseline = read(f"max({BASELINE}{{OWN}})", 'value | printf "%.3g"', s)
    kind = read(f"max by (baseline) ({BASELINE}{{OWN}})", 'label "baseline"', s)
    recent = read(f"max({RECENT}{{OWN}})", 'value | printf "%.3g"', s)
    direction = read(f"max by (direction) ({DRIFT}{{OWN}}) > 0", 'label "direction"', s)
    since = read(f"max({SINCE}{{OWN}})", "value | humanizeTimestamp", s)
    window = duration(config.drift.recent)
    verdict = "worse than" if worse else "changed from"
    return {
        "summary": f"{WHAT} {'regressed' if worse else 'drifted'} from its baseline",
        "description": f"{WHAT} moved {direction} from {baseline} (baseline: {kind}) to {recent} over the last "
        f"{window}, {verdict} its own past, since {since}.",
        "changes_url": template_text(context.external_url) + CHANGES_PATH,
        "explain_url": template_text(context.external_url) + explain_path(config),
    }


def explain_path(config: MonitorConfig) -> str:
    """The explanation of the alert's agent: its recent window against the trailing one before it (durations before
    the time the link is opened)."""
    recent, trailing = config.drift.recent, config.drift.trailing
    return (
        f"{EXPLAIN_PATH}&since={duration(recent)}&reference_since={duration(recent + trailing)}"
        f"&reference_until={duration(recent)}"
    )


def drift_rules(config: MonitorConfig, context: RuleContext) -> list[Rule]:
    """The two alerts, each when its switch (`drift.alerts.quality`, `.behaviour`) is on; none with drift off."""
    alerts = config.drift.alerts
    if not config.drift.enabled:
        return []
    wanted = [
        (QUALITY_ALERT, "quality", alerts.quality, alerts.severity),
        (BEHAVIOUR_ALERT, "behaviour", alerts.behaviour, alerts.behaviour_severity),
    ]
    return [
        context.alert(
            name,
            drift_expr(kind, context.selector),
            severity=severity,
            for_seconds=alerts.for_,
            annotations=drift_annotations(config, context, kind == "quality"),
        )
        for name, kind, on, severity in wanted
        if on
    ]
