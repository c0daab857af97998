"""The Explainer over a real store (SQLite and PostgreSQL): seeded traces written with their dimensions and
verdicts, each slice kind explained (an evaluator's failures, a range against a reference range, a filter, a
signature), the planted factor first; bad queries refused with the parameter named; a store that is not there is
"unavailable", never an error page."""

from __future__ import annotations

import time

import pytest

from monitor.config.explain import ExplainConfig
from monitor.explain.model import ExplainQuery
from monitor.explain.service import Explainer
from monitor.review.api_params import BadRequest, Unavailable
from monitor.review.of_store import reader_of
from tests.monitor.store.test_signatures_store import signature
from tests.support.backends import Backend
from tests.support.drift_rows import SyntheticTrace, create_store, write_traces
from tests.support.seeded_traces import seeded_traces
from tests.support.store_builders import outcome, row

EVALUATOR = "helpfulness"


def _write(backend: Backend, concentrate: str | None, n: int, at: float, service: str = "shop", seed: int = 3) -> None:
    seeded = seeded_traces(seed, n, concentrate)  # type: ignore[arg-type]
    write_traces(backend.location, [
        SyntheticTrace(created_at=at + i * 0.01, service=service, dimensions=tuple(pairs),
                       verdicts=((EVALUATOR, not failed, None), ("error_free", True, None)))
        for i, (pairs, failed) in enumerate(seeded.traces)
    ])  # fmt: skip


def _explainer(backend: Backend, **settings: object) -> Explainer:
    return Explainer(reader_of(backend.store()), ExplainConfig(**settings))


def _first(explanation) -> list[tuple[str, str]]:
    return [(v.dimension, v.value) for v in explanation.factors[0].values]


def test_an_evaluators_failures_against_its_passes_rank_the_planted_value_first(backend: Backend) -> None:
    create_store(backend.location)
    _write(backend, "value", 4000, 1000.0)
    _write(backend, None, 500, 1000.0, service="other", seed=4)  # another service: left out by the filter
    explanation = _explainer(backend).explain(ExplainQuery(evaluator=EVALUATOR, service="shop", since=0, until=1e6))
    assert explanation.kind == "failures" and explanation.reference == "its passes"
    assert _first(explanation) == [("model", "m0")]
    seeded = seeded_traces(3, 4000, "value")
    failed = sum(f for _, f in seeded.traces)
    assert (explanation.slice_traces, explanation.reference_traces) == (failed, 4000 - failed)
    assert explanation.factors[0].lift == pytest.approx(seeded.true_lift, rel=0.2)
    assert explanation.note is None and explanation.tested > 20


def test_the_failures_of_an_evaluator_without_any_are_a_note_not_factors(backend: Backend) -> None:
    create_store(backend.location)
    _write(backend, "value", 300, 1000.0)
    found = _explainer(backend).explain(ExplainQuery(evaluator="error_free", since=0, until=1e6))
    assert found.slice_traces == 0 and found.factors == []
    assert found.note == "no trace in this range is among the failures of error_free"


def test_a_recent_range_against_its_baseline_and_a_filter_against_the_rest(backend: Backend) -> None:
    """Recent traces all of m0 against a baseline of every model: model=m0 first; a filter (the service) against
    the other traces of the range."""
    create_store(backend.location)
    _write(backend, None, 1500, 1000.0)
    recent = [SyntheticTrace(created_at=5000.0 + i, service="shop", dimensions=(("model", "m0"), ("tool", f"t{i % 5}")))
              for i in range(200)]  # fmt: skip
    write_traces(backend.location, recent)
    explainer = _explainer(backend)
    drift = explainer.explain(ExplainQuery(service="shop", since=5000, until=6000, reference_since=0,
                                           reference_until=5000))  # fmt: skip
    assert drift.kind == "drift" and (drift.slice_traces, drift.reference_traces) == (200, 1500)
    assert _first(drift) == [("model", "m0")] and drift.factors[0].slice_share == 1.0
    _write(backend, None, 300, 1000.0, service="billing", seed=5)
    by_service = explainer.explain(ExplainQuery(service="shop", since=0, until=1e6))
    assert by_service.kind == "filter" and by_service.reference_traces == 300


def test_a_signatures_traces_against_the_evaluators_other_verdicts(backend: Backend) -> None:
    store = backend.store()
    signed = row("error_free", False)._replace(signature=signature())
    traces = [outcome(f"{i:032x}", signed)._replace(dimensions=(("model", "bad"),)) for i in range(12)]
    traces += [outcome(f"{i + 100:032x}", row("error_free", True))._replace(dimensions=(("model", f"ok{i % 3}"),))
               for i in range(60)]  # fmt: skip
    store.write(traces)
    [(signature_id,)] = {tuple(r) for r in backend.rows("SELECT signature FROM results WHERE signature IS NOT NULL")}
    explainer = Explainer(reader_of(store), ExplainConfig())
    now = time.time()
    query = ExplainQuery(evaluator="error_free", signature=signature_id, since=now - 3600, until=now + 60)
    found = explainer.explain(query)
    assert found.kind == "signature" and (found.slice_traces, found.reference_traces) == (12, 60)
    assert _first(found) == [("model", "bad")] and found.factors[0].lift is None  # only in the signature
    store.close()


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"evaluator": "x", "since": 10, "until": 10}, "until"),
        ({"evaluator": "x", "since": 0, "until": 40 * 86400}, "since"),
        ({"since": 0, "until": 10}, "evaluator"),
        ({"service": "s", "since": 5, "until": 10, "reference_since": 0}, "reference_since"),
        ({"service": "s", "since": 5, "until": 10, "reference_since": 4, "reference_until": 1}, "reference_until"),
        ({"evaluator": "x", "since": 5, "until": 10, "reference_since": 0, "reference_until": 5}, "reference_since"),
    ],
)
def test_a_query_that_names_no_slice_or_a_bad_range_is_refused_naming_the_parameter(query, parameter) -> None:
    with pytest.raises(BadRequest, match=f"^{parameter}:"):
        Explainer(None).explain(ExplainQuery(**query))


def test_without_a_store_or_with_one_that_cannot_be_read_it_is_unavailable(tmp_path) -> None:
    with pytest.raises(Unavailable, match=r"^explain unavailable: the result store is disabled"):
        Explainer(None).explain(ExplainQuery(evaluator="x", since=0, until=10))
    reader = reader_of(Backend("sqlite", str(tmp_path / "r.db")).store())
    (tmp_path / "r.db").unlink()
    (tmp_path / "r.db").mkdir()  # no database there any more
    with pytest.raises(Unavailable, match=r"^explain unavailable: "):
        Explainer(reader).explain(ExplainQuery(evaluator="x", since=0, until=10))
