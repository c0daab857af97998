"""Prometheus rules from a `MonitorConfig`: pure functions, deterministic output.

`rule_groups(config)` gives the rule groups (plain dicts): `agent-monitor.quality` (one `AgentEvalPassRatioLow`
per evaluator with `alert:`, and `AgentEvalNewFailureSignature` over every evaluator), one
`agent-monitor.slo.<evaluator>` per evaluator with `slo:` (recording rules and the four `AgentEvalErrorBudgetBurn`
alerts), `agent-monitor.canary` (one `AgentEvalVariantWorse` per `variants.compare` entry), and
`agent-monitor.health` (the daemon's own alerts, when `alerting.health.enabled`), and `agent-monitor.spend` (the
spend recording rules, always, and `AgentSpendOverBudget` when `alerting.spend.max_usd_per_hour` is set), and
`agent-monitor.drift` (`AgentQualityRegression` and `AgentBehaviourDrift`, while `drift.enabled`). Disabled
evaluators get no rules; empty groups are left out. `render` writes them as a Prometheus rule file (`groups:`) or as a
`PrometheusRule` resource of the Prometheus Operator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import yaml

from monitor.config import EvaluatorEntry, MonitorConfig
from monitor.config.address import external_url

from .canary_rules import canary_rules
from .context import RuleContext, group
from .drift_rules import drift_rules
from .health_rules import health_rules
from .quality_rules import quality_rules
from .signature_rules import signature_rules
from .slo_rules import slo_groups
from .spend_rules import spend_rules

Format = Literal["prometheus", "prometheus-operator"]
FORMATS: tuple[Format, ...] = ("prometheus", "prometheus-operator")
RESOURCE_NAME = "agent-monitor"
RESOURCE_LABELS = {"app.kubernetes.io/component": "alerting-rules", "app.kubernetes.io/name": "agent-monitor"}


Labelled = Sequence[tuple[str, EvaluatorEntry]]


def labelled_entries(config: MonitorConfig) -> list[tuple[str, EvaluatorEntry]]:
    """The enabled evaluator entries with their `entry.label` (id, else name, else module path). The daemon
    labels a module entry without an `id` with the evaluator's own name, known only once the module is
    imported: `agent-monitor rules` builds the evaluators and passes their labels instead."""
    return [(r.entry.label, r.entry) for r in config.evaluator_entries() if r.entry.enabled]


def rule_groups(config: MonitorConfig, evaluators: Labelled | None = None) -> list[dict[str, Any]]:
    """The rule groups for this config, in a fixed order (quality, SLOs by evaluator, canary, health, spend,
    drift); `evaluators`: the (metric label, entry) pairs to write rules for, by default `labelled_entries(config)`."""
    context = RuleContext.of(config.alerting, external_url(config))
    interval = config.alerting.group_interval
    pairs = labelled_entries(config) if evaluators is None else evaluators
    external = config.external_evaluations  # the application's own evaluators' (keyed by their metric label)
    alerts = [(label, entry.alert) for label, entry in pairs if entry.alert is not None] + list(external.alerts.items())
    slos = [(label, entry.slo) for label, entry in pairs if entry.slo is not None] + list(external.slos.items())
    new_signatures = config.alerting.default_alerts.new_signatures_alert()
    quality = quality_rules(alerts, context) + signature_rules(new_signatures, config.signatures, context)
    groups = []
    if quality:
        groups.append(group("agent-monitor.quality", interval, quality))
    groups += slo_groups(slos, context, interval)
    if config.variants.compare:
        groups.append(group("agent-monitor.canary", interval, canary_rules(config.variants.compare, context)))
    if health := health_rules(config.alerting.health, context):
        groups.append(group("agent-monitor.health", interval, health))
    groups.append(group("agent-monitor.spend", interval, spend_rules(config.alerting.spend, context)))
    if drift := drift_rules(config, context):
        groups.append(group("agent-monitor.drift", interval, drift))
    return groups


def rule_file(config: MonitorConfig, evaluators: Labelled | None = None) -> dict[str, Any]:
    """A Prometheus rule file (`rule_files:` of prometheus.yml)."""
    return {"groups": rule_groups(config, evaluators)}


def prometheus_rule(
    config: MonitorConfig, namespace: str | None = None, evaluators: Labelled | None = None
) -> dict[str, Any]:
    """A `monitoring.coreos.com/v1` PrometheusRule holding the same groups (for `kubectl apply -f -`)."""
    metadata: dict[str, Any] = {"name": RESOURCE_NAME}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(RESOURCE_LABELS)
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata,
        "spec": rule_file(config, evaluators),
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the PromQL) as literal blocks; no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def to_yaml(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000)


def render(
    config: MonitorConfig,
    fmt: Format = "prometheus",
    namespace: str | None = None,
    *,
    source: str = "",
    evaluators: Labelled | None = None,
) -> str:
    """The rules as YAML text in `fmt`, after a header comment naming the config they come from."""
    if fmt == "prometheus-operator":
        document = prometheus_rule(config, namespace, evaluators)
    else:
        document = rule_file(config, evaluators)
    command = ["agent-monitor rules"]
    if source:
        command.append(f"--config {source}")
    if fmt != "prometheus":
        command.append(f"--format {fmt}")
        if namespace:
            command.append(f"--namespace {namespace}")
    header = (
        f"# Generated by `{' '.join(command)}`.\n"
        "# Do not edit: change the evaluators' alert:/slo: blocks or the alerting: section of the config and\n"
        "# regenerate (docs/alerting.md).\n"
    )
    return header + to_yaml(document)
