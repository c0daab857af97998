"""Each evaluated trace's dimensions (monitor/explain/dimensions.py) on its outcome, for the store: kept when explain
is on and there is a store, never the cause of a failed trace."""

from __future__ import annotations

import pytest

from evaluators.traces import Trace, load_traces
from monitor.config import MonitorConfig
from monitor.engine import trace_evaluation
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.explain.dimensions import DimensionSettings, dimensions_of
from tests.conftest import CORPUS


def handoff() -> Trace:
    (trace,) = load_traces([CORPUS / "oi_openai_agents__weather_handoff"])
    return trace


def test_the_outcome_carries_the_dimensions() -> None:
    evaluator = TraceEvaluator.from_config([], MonitorConfig())
    trace = handoff()
    outcome = evaluator.outcome(trace)
    assert outcome.dimensions == dimensions_of(trace, DimensionSettings())
    assert ("agent", "triage_agent") in outcome.dimensions


def test_explain_off_or_no_store_keeps_no_dimensions() -> None:
    trace = handoff()
    for config in ({"explain": {"enabled": False}}, {"store": {"enabled": False}}):
        evaluator = TraceEvaluator.from_config([], MonitorConfig.model_validate(config))
        assert evaluator.dimension_settings is None and evaluator.outcome(trace).dimensions == ()
    assert TraceEvaluator([]).outcome(trace).dimensions == ()


def test_the_configured_dimensions_reach_the_settings() -> None:
    config = MonitorConfig.model_validate(
        {"explain": {"dimensions": ["tier"], "language": False}, "sessions": {"attribute": ["app.thread"]}}
    )
    assert TraceEvaluator.from_config([], config).dimension_settings == DimensionSettings(
        ("tier",), False, ("app.thread",)
    )


def test_failing_dimensions_never_fail_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> tuple:
        raise RuntimeError("boom")

    monkeypatch.setattr(trace_evaluation, "dimensions_of", broken)
    trace = handoff()
    outcome = TraceEvaluator.from_config([], MonitorConfig()).outcome(trace)
    assert outcome.dimensions == () and outcome.trace_id == trace.trace_id
