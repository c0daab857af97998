"""What every generated rule shares: the alerting section's selector, extra labels and annotation templates.

Rules are plain dicts in Prometheus rule-file shape (`alert`/`record`, `expr`, `for`, `labels`, `annotations`),
with their keys in that conventional order and labels and annotations sorted.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from monitor.config import AlertingConfig

from .promql import duration

Rule = dict[str, Any]
SERVICE_QUERY = "{{ $labels.service | urlquery }}"  # {service} of a URL template: the alert's service
EVALUATOR_QUERY = "{{ $labels.evaluator | urlquery }}"  # {evaluator} of an alert over every evaluator
_SERVICE_PARAM = re.compile(r"([?&])[^?&=#]+=\{service\}(&?)")  # a query parameter that is only {service}


@dataclass(frozen=True, slots=True)
class RuleContext:
    """The `alerting` config as the rule builders need it."""

    selector: str = ""  # matchers without braces, appended to every raw-series selector
    job: str = "agent-monitor"
    labels: dict[str, str] = field(default_factory=dict)
    runbook_url_template: str = ""
    traces_url_template: str = ""
    explain_url_template: str = ""
    external_url: str = ""  # {external_url} of the URL templates: where people reach the review page

    @classmethod
    def of(cls, alerting: AlertingConfig, external_url: str = "") -> RuleContext:
        return cls(
            selector=alerting.selector,
            job=alerting.job,
            labels=dict(alerting.labels),
            runbook_url_template=alerting.runbook_url_template,
            traces_url_template=alerting.traces_url_template,
            explain_url_template=alerting.explain_url_template,
            external_url=external_url,
        )

    def fill(
        self,
        template: str,
        alert: str,
        evaluator: str | None = "",
        window: float | None = None,
        service: bool = True,
    ) -> str | None:
        """`template` with {external_url} (the review page's base URL), {alert}, {evaluator} (URL-quoted, so no `{{`
        of its own reaches Prometheus' templating; None: the Go template of the alert's URL-quoted `evaluator`
        label) and {window} (the alert's own window, e.g. 30m) replaced literally, and {service} by the Go template
        of the alert's URL-quoted `service` label (for an alert without one, `service=false`, a query parameter
        `x={service}` is left out); Go templates such as {{ $labels.service }} are kept. None when the template is
        empty."""
        if not template:
            return None
        quoted = EVALUATOR_QUERY if evaluator is None else urllib.parse.quote(evaluator, safe=":")
        text = template.replace("{external_url}", template_text(self.external_url))
        text = text.replace("{alert}", alert).replace("{evaluator}", quoted)
        if not service:
            text = _SERVICE_PARAM.sub(lambda m: m[1] if m[2] else "", text)
        text = text.replace("{service}", SERVICE_QUERY)
        return text.replace("{window}", duration(window) if window else "")

    def alert(
        self,
        name: str,
        expr: str,
        *,
        severity: str,
        for_seconds: float = 0.0,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str],
        evaluator: str | None = None,
        window: float | None = None,
        by_service: bool = True,
        by_evaluator: bool = False,
    ) -> Rule:
        """An alerting rule with severity, the given and the configured labels, the runbook link and, for an
        evaluator's alert, its `evaluator` label and the links to its failing traces and to their explanation (of
        the alert's service, over its `window` in seconds; `by_service`: the alert has a `service` label).
        `by_evaluator`: an alert over every evaluator, whose series carry the `evaluator` label; its links are
        filled in from that label."""
        notes = dict(annotations)
        if runbook := self.fill(self.runbook_url_template, name, None if by_evaluator else evaluator or ""):
            notes["runbook_url"] = runbook
        own = None if by_evaluator else evaluator
        if (by_evaluator or evaluator is not None) and (
            traces := self.fill(self.traces_url_template, name, own, window, by_service)
        ):
            notes["failing_traces_url"] = traces
        if (by_evaluator or evaluator is not None) and (
            explained := self.fill(self.explain_url_template, name, own, window, by_service)
        ):
            notes["explain_url"] = explained
        rule: Rule = {"alert": name, "expr": expr}
        if for_seconds > 0:
            rule["for"] = duration(for_seconds)
        fixed = {**(labels or {}), "severity": severity}
        if evaluator is not None:  # also on the series; as a rule label it keeps rules of one name distinct
            fixed["evaluator"] = template_text(evaluator)
        rule["labels"] = dict(sorted({**self.labels, **fixed}.items()))
        rule["annotations"] = dict(sorted(notes.items()))
        return rule


def template_text(value: str) -> str:
    """`value` as literal text of a Prometheus (Go) template: alerting rules' label values are templates."""
    return value.replace("{{", '{{ "{{" }}')


def record(name: str, expr: str, labels: dict[str, str] | None = None) -> Rule:
    """A recording rule."""
    rule: Rule = {"record": name, "expr": expr}
    if labels:
        rule["labels"] = dict(sorted(labels.items()))
    return rule


def group(name: str, interval: float, rules: list[Rule]) -> dict[str, Any]:
    """A rule group evaluated every `interval` seconds."""
    return {"name": name, "interval": duration(interval), "rules": rules}
