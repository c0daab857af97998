"""The attribution job (monitor/explain/attribution.py) over a real SQLite store: each round explains the evaluators
whose threshold is breached (firing or pending) and publishes their top factors (at most `top`); an evaluator no
longer breached drops out; one whose explanation fails keeps its last factors and is counted; no breach, no read.
And the daemon's wiring: no explainer without a store or with explanations off, and why."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry

from monitor.alerting.thresholds import AlertState
from monitor.config.explain import AttributionConfig, ExplainConfig
from monitor.explain.attribution import AttributionJob, explanations_of, published
from monitor.explain.service import Explainer
from monitor.metrics.attribution import AttributionMetrics
from monitor.review.of_store import reader_of
from monitor.store.sqlite import ResultStore
from tests.support.drift_rows import SyntheticTrace, write_traces
from tests.support.seeded_traces import seeded_traces

NOW = 1_000_000.0


def _store(path: Path) -> ResultStore:
    store = ResultStore(path)
    seeded = seeded_traces(3, 3000, "value")
    write_traces(path, [
        SyntheticTrace(created_at=NOW - 600 + i * 0.1, service="shop", dimensions=tuple(pairs),
                       verdicts=(("helpfulness", not failed, None), ("error_free", True, None)))
        for i, (pairs, failed) in enumerate(seeded.traces)
    ])  # fmt: skip
    return store


def _state(evaluator: str, active: bool = True, pending: bool = False) -> AlertState:
    return AlertState(evaluator, "shop", "AgentEvalPassRatioLow", active, 0.5, 100, pending)


class _Sink(AttributionMetrics):
    def __init__(self) -> None:
        super().__init__(CollectorRegistry())
        self.rounds: list[dict] = []

    def publish(self, factors) -> None:  # type: ignore[override]
        self.rounds.append(dict(factors))
        super().publish(factors)


def test_a_round_publishes_the_top_factors_of_the_breached_evaluators_only(tmp_path: Path) -> None:
    store = _store(tmp_path / "r.db")
    breaches = [_state("helpfulness", active=False, pending=True), _state("error_free", active=False)]
    sink = _Sink()
    job = AttributionJob(Explainer(reader_of(store)), lambda: breaches, AttributionConfig(top=2), sink, lambda: NOW)
    found = asyncio.run(job.run_once())
    assert list(found) == [("helpfulness", "shop")]  # pending counts; not breached: not read
    assert found[("helpfulness", "shop")][0][:2] == ("model", "m0") and len(found[("helpfulness", "shop")]) <= 2
    breaches.clear()
    assert asyncio.run(job.run_once()) == {} and sink.rounds[-1] == {}  # recovered: its series go
    store.close()


def test_a_failed_explanation_keeps_the_last_factors_and_is_counted(tmp_path: Path) -> None:
    store = _store(tmp_path / "r.db")
    explainer = Explainer(reader_of(store))
    sink = _Sink()
    job = AttributionJob(explainer, lambda: [_state("helpfulness")], AttributionConfig(), sink, lambda: NOW)
    first = asyncio.run(job.run_once())
    explainer.reader = None  # the store gone: every explanation now raises Unavailable
    assert asyncio.run(job.run_once()) == first
    assert sink.failures._value.get() == 1.0  # type: ignore[attr-defined]
    store.close()


def test_no_breach_reads_nothing(tmp_path: Path) -> None:
    sink = _Sink()
    job = AttributionJob(Explainer(None), lambda: [_state("helpfulness", active=False)], AttributionConfig(), sink)
    assert asyncio.run(job.run_once()) == {} and sink.failures._value.get() == 0.0  # type: ignore[attr-defined]


def test_the_daemon_gets_an_explainer_only_with_a_store_and_explanations_on(tmp_path: Path) -> None:
    sink = _Sink()
    off = explanations_of(ExplainConfig(enabled=False), object(), list, sink)  # type: ignore[arg-type]
    assert off.explainer is None and off.attribution is None and "explain.enabled: false" in (off.unavailable or "")
    storeless = explanations_of(ExplainConfig(), None, list, sink)
    assert storeless.explainer is None and "store.enabled: false" in (storeless.unavailable or "")
    store = ResultStore(tmp_path / "r.db")
    on = explanations_of(ExplainConfig(), reader_of(store), list, sink)
    assert on.explainer is not None and on.attribution is not None and on.unavailable is None
    quiet = explanations_of(ExplainConfig(attribution=AttributionConfig(enabled=False)), reader_of(store), list, sink)
    assert quiet.explainer is not None and quiet.attribution is None
    store.close()


def test_a_pair_is_one_series_its_dimensions_and_values_joined() -> None:
    from monitor.explain.model import DimensionValue, Factor

    values = [DimensionValue(dimension="model", value="pro"), DimensionValue(dimension="service.version", value="1.5")]
    pair = Factor(
        values=values,
        slice_traces=10, slice_share=1.0, reference_traces=0, reference_share=0.0, lift=None, p_value=0.0,
        q_value=0.0, coverage=1.0,
    )  # fmt: skip
    assert published(pair) == ("model AND service.version", "pro AND 1.5", None)


def test_a_round_explains_at_most_max_per_round_the_lowest_pass_ratios_first(tmp_path: Path) -> None:
    from monitor.explain.attribution import MAX_PER_ROUND

    store = _store(tmp_path / "r.db")
    many = [AlertState(f"e{i:02}", "shop", "AgentEvalPassRatioLow", True, 0.9 - i / 100, 100) for i in range(15)]
    many.append(_state("helpfulness"))  # pass ratio 0.5: the lowest
    sink = _Sink()
    found = asyncio.run(AttributionJob(Explainer(reader_of(store)), lambda: many, AttributionConfig(), sink).run_once())
    assert len(found) == MAX_PER_ROUND and ("helpfulness", "shop") in found
    assert ("e00", "shop") not in found and ("e14", "shop") in found  # 0.9 is the highest: left out
    store.close()
