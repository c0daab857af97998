"""The `review` config section: the review page on the metrics port (/review), its trace-UI link and page size,
and the review queue's rules (`review.queue`, /review/queue: monitor/review/queue.py)."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import quote, urlsplit

from pydantic import Field, field_validator

from .units import Duration, Label, Ratio, Section

TRACE_ID_PLACEHOLDER = "{trace_id}"
MAX_PAGE_SIZE = 500
MIN_REVIEWS = 20  # scored reviews `agent-monitor calibrate` needs to suggest a threshold (calibration.py)
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


Priority = Annotated[int, Field(ge=0, le=1000)]
EvaluatorChoice = Literal["judges", "all"] | Annotated[list[Label], Field(min_length=1)]


class SampleRule(Section):
    """A share of each chosen evaluator's results (passing and failing), chosen by trace id so that every replica
    picks the same ones. `evaluators`: `judges` (the LLM judges), `all`, or a list of evaluator names."""

    enabled: bool = True
    priority: Priority = 10
    share: Ratio = 0.1
    evaluators: EvaluatorChoice = "judges"


class NearThresholdRule(Section):
    """Scored results within `margin` of their evaluator's `threshold` (evaluators without one are left out)."""

    enabled: bool = True
    priority: Priority = 20
    margin: Annotated[float, Field(gt=0, le=1)] = 0.1
    evaluators: EvaluatorChoice = "all"


class NewSignatureRule(Section):
    """The first `first` failing results of each failure signature first seen within `within`."""

    enabled: bool = True
    priority: Priority = 30
    first: Annotated[int, Field(ge=1, le=100)] = 3
    within: Duration = 86400.0


class AlertingRule(Section):
    """The failing results of an evaluator whose in-process alert (its `alert:`) is firing."""

    enabled: bool = True
    priority: Priority = 40


class QueueConfig(Section):
    """The review queue (/review/queue): the results it offers, rule by rule, highest `priority` first (newest
    first within a rule), among those evaluated within `window` and not reviewed yet. Reviews go round the
    configured evaluators first: while an evaluator with results to offer has fewer than `per_evaluator_target`
    reviews made within `window`, the one with the fewest comes first (0: no spreading, the rules alone)."""

    enabled: bool = True
    window: Duration = 7 * 86400.0
    per_evaluator_target: Annotated[int, Field(ge=0, le=10_000)] = MIN_REVIEWS
    alerting: AlertingRule = Field(default_factory=AlertingRule)
    new_signature: NewSignatureRule = Field(default_factory=NewSignatureRule)
    near_threshold: NearThresholdRule = Field(default_factory=NearThresholdRule)
    sample: SampleRule = Field(default_factory=SampleRule)


class ReviewConfig(Section):
    """`trace_url_template`: a link to the trace in a trace UI (Jaeger, Grafana/Tempo), `{trace_id}` replaced
    (URL-encoded); "" shows no link. `page_size`: results per page of /review. `queue`: the review queue."""

    trace_url_template: str = ""
    page_size: Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE)] = 50
    queue: QueueConfig = Field(default_factory=QueueConfig)

    @field_validator("trace_url_template")
    @classmethod
    def _template(cls, template: str) -> str:
        template = template.strip()
        if not template:
            return ""
        if TRACE_ID_PLACEHOLDER not in template:
            raise ValueError(f"must contain {TRACE_ID_PLACEHOLDER}, e.g. http://localhost:16686/trace/{{trace_id}}")
        if _CONTROL.search(template):
            raise ValueError("must not contain spaces or control characters (URL-encode them)")
        parts = urlsplit(template.replace(TRACE_ID_PLACEHOLDER, "0"))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"must be an http:// or https:// URL, got {template!r}")
        return template

    def trace_url(self, trace_id: str) -> str | None:
        """The trace UI's URL for `trace_id`, or None without a template."""
        if not self.trace_url_template:
            return None
        return self.trace_url_template.replace(TRACE_ID_PLACEHOLDER, quote(trace_id, safe=""))
