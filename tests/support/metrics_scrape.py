"""Helpers for the metrics tests: a settable clock, parsed classic exposition, and result shortcuts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from prometheus_client.parser import text_string_to_metric_families

from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import CallFigures

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


class ResultView(NamedTuple):
    """The fields of a result row the metrics read (monitor.outcomes.ResultRow has them all)."""

    agent: str | None
    evaluator: str
    level: str
    score: float | None
    passed: bool | None
    skip_reason: str | None
    duration_seconds: float


def observe_trace(
    exporter: MetricsExporter,
    service: str,
    duration_seconds: float,
    has_error: bool,
    tokens: Sequence[tuple[str | None, int, int]],
    tools: Sequence[tuple[str, bool]],
    trace_id: str,
    llm_calls: Sequence[tuple[str | None, bool]] = (),
) -> None:
    """One evaluated trace, through the daemon's path (a tally the exporter applies): `tokens` (model, input,
    output) of calls made without an agent, unpriced; `llm_calls` (model, ok) of calls with no usage."""
    calls = [CallFigures(model, "", "", True, (i, 0, 0, o, 0), None) for model, i, o in tokens]
    calls += [CallFigures(model, "", "", ok, None, None) for model, ok in llm_calls]
    tally = MetricsTally()
    tally.add_trace(service, duration_seconds, has_error, trace_id, calls, tools)
    exporter.results.apply_tally(tally)


def observe_result(
    exporter: MetricsExporter,
    *,
    evaluator: str,
    level: str,
    service: str,
    agent: str | None,
    score: float | None,
    passed: bool | None,
    skipped: bool,
    skip_reason: str | None,
    trace_id: str,
    duration_seconds: float,
    variant: str = "",
) -> None:
    """One evaluation result, through the daemon's path (a tally the exporter applies; a skip without a reason
    counts as `no_verdict`)."""
    row = ResultView(agent, evaluator, level, score, None if skipped else passed, skip_reason, duration_seconds)
    tally = MetricsTally()
    tally.add_results(service, trace_id, [row], variant)
    exporter.results.apply_tally(tally)


class FakeClock:
    """A clock the test moves by hand (`clock.now += 301`)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def classic(exporter: MetricsExporter) -> str:
    return exporter.render(None)[0].decode()


def samples(exporter: MetricsExporter, name: str) -> list[Any]:
    """Every exposed sample called `name` in the classic exposition."""
    return [s for f in text_string_to_metric_families(classic(exporter)) for s in f.samples if s.name == name]


def value(exporter: MetricsExporter, name: str, **labels: str) -> float | None:
    """The sample of `name` with exactly `labels`; a `variant` label left out means the empty variant, a `source`
    label left out the daemon's own evaluators."""
    found = [s.value for s in samples(exporter, name) if s.labels == _with_defaults(s.labels, labels)]
    assert len(found) <= 1, f"{name}{labels} exposed {len(found)} times"
    return found[0] if found else None


_DEFAULT_LABELS = {"variant": "", "source": "daemon"}


def _with_defaults(exposed: dict[str, str], wanted: dict[str, str]) -> dict[str, str]:
    missing = {k: v for k, v in _DEFAULT_LABELS.items() if k in exposed and k not in wanted}
    return {**wanted, **missing} if missing else wanted


def result_labels(
    outcome: str,
    evaluator: str = "relevance",
    service: str = "svc",
    level: str = "trace",
    agent: str = "",
    variant: str = "",
    source: str = "daemon",
) -> dict[str, str]:
    """The full label set of one agent_eval_results_total series."""
    return dict(
        evaluator=evaluator, level=level, service=service, agent=agent, variant=variant, outcome=outcome, source=source
    )


def result(exporter: MetricsExporter, **overrides: Any) -> None:
    args: dict[str, Any] = dict(
        evaluator="relevance", level="trace", service="svc", agent=None, score=0.9, passed=True,
        skipped=False, skip_reason=None, trace_id=TRACE_ID, duration_seconds=0.02,
    )  # fmt: skip
    args.update(overrides)
    observe_result(exporter, **args)


def scored(exporter: MetricsExporter, scores: list[float], threshold: float = 0.5, **overrides: Any) -> None:
    for score in scores:
        result(exporter, score=score, passed=score >= threshold, **overrides)
