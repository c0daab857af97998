"""The review's failure signature reads on SQLite and PostgreSQL (rows written by SQL fixtures): impact order,
growth, trend, status, where seen, filters, pagination, one signature's traces, new in the candidate."""

from __future__ import annotations

import pytest

from monitor.review.signature_models import SignatureFilter, status_of
from tests.support.backends import Backend
from tests.support.signature_rows import Sig, failing_traces, insert_failure, insert_signature, set_up

NOW = 1_750_000_000.0
HOUR = 3600.0
DAY = 86400.0
A, B, C = "a" * 16, "b" * 16, "c" * 16


def day_filter(**fields: object) -> SignatureFilter:
    return SignatureFilter(since=NOW - DAY, until=NOW, **fields)  # type: ignore[arg-type]


def seeded(backend: Backend) -> None:
    """A: 3 results in the day (none before); B: 3 in the day, 1 before (less growth); C: 1 in the day."""
    set_up(backend)
    insert_signature(backend, Sig(A, first_seen=NOW - 2 * HOUR, last_seen=NOW - 60, count=3, variants=["1.5"]))
    insert_signature(
        backend,
        Sig(B, evaluator="error_free", step_name="search", first_seen=NOW - 3 * DAY, last_seen=NOW - HOUR, count=9),
    )
    insert_signature(backend, Sig(C, evaluator="refusal", first_seen=NOW - 5 * DAY, last_seen=NOW - 20 * HOUR, count=2))
    failing_traces(backend, Sig(A), [NOW - 90 * 60, NOW - 30 * 60, NOW - 60], variant="1.5", start=1)
    failing_traces(backend, Sig(B, evaluator="error_free"), [NOW - 5 * HOUR, NOW - 4 * HOUR, NOW - HOUR], start=10)
    failing_traces(backend, Sig(B, evaluator="error_free"), [NOW - DAY - HOUR], start=20)
    failing_traces(backend, Sig(C, evaluator="refusal", services=["search-api"]), [NOW - 20 * HOUR], start=30)


def test_signatures_by_impact_with_growth_trend_status_and_where_seen(backend: Backend) -> None:
    seeded(backend)
    reader = backend.reader()
    page = reader.signatures(day_filter(), 50, None, NOW, DAY)
    assert [s.id for s in page.items] == [A, B, C]  # A and B tie on results; A grew more (from none)
    a, b, c = page.items
    assert (a.results, a.traces, a.previous_results, a.growth) == (3, 3, 0, None)
    assert (b.results, b.previous_results, b.growth) == (3, 1, 2.0)
    assert (a.status, b.status, c.status) == ("new", "ongoing", "ongoing")
    assert a.template.startswith("convert_currency failed") and a.step_name == "convert_currency"
    assert a.services == ["checkout"] and a.variants == ["1.5"] and a.models == ["gemini-2.0-flash"]
    assert len(a.trend) == 24 and a.trend_step == HOUR and sum(a.trend) == 3
    assert a.trend[-1] == 2 and a.trend[-2] == 1  # the last hour holds two, the hour before one
    assert page.next_cursor is None
    reader.close()


def test_filters_and_pages(backend: Backend) -> None:
    seeded(backend)
    reader = backend.reader()
    assert [s.id for s in reader.signatures(day_filter(evaluator="refusal"), 50, None, NOW, DAY).items] == [C]
    assert [s.id for s in reader.signatures(day_filter(service="search-api"), 50, None, NOW, DAY).items] == [C]
    assert [s.id for s in reader.signatures(day_filter(variant="1.5"), 50, None, NOW, DAY).items] == [A]
    first = reader.signatures(day_filter(), 2, None, NOW, DAY)
    assert [s.id for s in first.items] == [A, B] and first.next_cursor
    second = reader.signatures(day_filter(), 2, first.next_cursor, NOW + 999, DAY)
    assert [s.id for s in second.items] == [C] and second.next_cursor is None
    with pytest.raises(ValueError):
        reader.signatures(day_filter(), 2, "bm90IGEgY3Vyc29y", NOW, DAY)
    reader.close()


def test_one_signature_lists_its_traces_with_every_failing_verdict(backend: Backend) -> None:
    seeded(backend)
    insert_failure(backend, f"{2:032x}", NOW - 30 * 60, None, "refusal", explanation="refused to convert")
    reader = backend.reader()
    detail = reader.signature(A, day_filter(), 2, None, NOW, DAY)
    assert detail is not None and detail.signature.id == A and detail.signature.results == 3
    assert [t.trace_id for t in detail.traces] == [f"{3:032x}", f"{2:032x}"]  # newest first
    second = detail.traces[1]
    assert second.variant == "1.5" and second.service == "checkout"
    assert [(v.evaluator, v.signature) for v in second.verdicts] == [
        ("tool_success_rate", A),
        ("error_free", None),
        ("refusal", None),
    ]
    assert second.verdicts[2].explanation == "refused to convert"
    assert detail.next_cursor
    rest = reader.signature(A, day_filter(), 2, detail.next_cursor, NOW, DAY)
    assert rest is not None and [t.trace_id for t in rest.traces] == [f"{1:032x}"] and rest.next_cursor is None
    assert reader.signature("f" * 16, day_filter(), 2, None, NOW, DAY) is None
    reader.close()


def test_new_in_the_candidate(backend: Backend) -> None:
    set_up(backend)
    new, common, often = "1" * 16, "2" * 16, "3" * 16
    for ident in (new, common, often):
        insert_signature(backend, Sig(ident, first_seen=NOW - HOUR, last_seen=NOW - 60))
    failing_traces(backend, Sig(new), [NOW - 600, NOW - 500], variant="1.5", start=1, also=())
    failing_traces(backend, Sig(common), [NOW - 400], variant="1.5", start=10, also=())
    failing_traces(backend, Sig(common), [NOW - 400], variant="1.4", start=20, also=())
    for n, at in enumerate([NOW - 300] * 8):  # `often`: 8 results on one candidate trace, 1 on a baseline trace
        insert_failure(backend, f"{1:032x}", at - n, often)
    failing_traces(backend, Sig(often), [NOW - 200], variant="1.4", start=30, also=())
    reader = backend.reader()
    found = reader.candidate_signatures("1.5", "1.4", NOW - HOUR, NOW)
    assert (found.candidate_traces, found.baseline_traces) == (3, 2)
    assert [(s.id, s.only_in_candidate) for s in found.items] == [(often, False), (new, True)]
    reader.close()


def test_status_rules() -> None:
    assert status_of(NOW - 10, NOW - 5, None, NOW, DAY) == "new"
    assert status_of(NOW - 3 * DAY, NOW - 5, None, NOW, DAY) == "ongoing"
    assert status_of(NOW - 3 * DAY, NOW - 5, NOW - HOUR, NOW, DAY) == "regressed"
    assert status_of(NOW - 3 * DAY, NOW - 5, NOW - 2 * DAY, NOW, DAY) == "ongoing"
    assert status_of(NOW - 3 * DAY, NOW - DAY, NOW - HOUR, NOW, DAY) == "resolved"
