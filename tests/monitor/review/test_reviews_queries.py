"""The review API's store queries on both databases: the reviews in force by filter (newest first, limited) and
those of a page of traces; superseded reviews are never listed."""

from __future__ import annotations

from monitor.review.review_models import ReviewFilter
from monitor.store.reviews import ResultKey, ReviewInput, find_reviews, reviews_of_traces, write_review
from tests.monitor.store.test_reviews_store import TRACE, stored
from tests.support.backends import Backend
from tests.support.store_builders import outcome, row

OTHER = "cd" * 16


def test_filters_newest_first_and_a_page_of_traces(backend: Backend) -> None:
    store = stored(backend)
    store.write([outcome(OTHER, row("faithful", False))])
    writes = [
        (ReviewInput(ResultKey(TRACE, "faithful", "trace"), "disagree", "ann"), 100.0),
        (ReviewInput(ResultKey(OTHER, "faithful", "trace"), "agree", "bob"), 110.0),
        (ReviewInput(ResultKey(TRACE, "json_valid", "llm", "s2"), "disagree", "ann"), 120.0),
        (ReviewInput(ResultKey(TRACE, "faithful", "trace"), "agree", "carol"), 130.0),  # supersedes ann's
    ]
    for review, now in writes:
        store.transaction(lambda db, review=review, now=now: write_review(db, review, now))

    def found(limit: int = 50, **filters: object) -> list[tuple[str, str]]:
        got = store.transaction(lambda db: find_reviews(db, limit, **filters))
        return [(r.trace_id[:2], r.reviewer) for r in got]

    assert found() == [("ab", "carol"), ("ab", "ann"), ("cd", "bob")]
    assert found(limit=1) == [("ab", "carol")]
    assert found(evaluator="faithful") == [("ab", "carol"), ("cd", "bob")]
    assert found(trace_id=OTHER) == [("cd", "bob")]
    assert found(reviewer="ann") == [("ab", "ann")]  # ann's faithful review is superseded
    assert found(agreement="agree", since=115.0) == [("ab", "carol")]
    assert found(**ReviewFilter(evaluator="json_valid").model_dump()) == [("ab", "ann")]

    page = store.transaction(lambda db: reviews_of_traces(db, [TRACE, OTHER, "ef" * 16]))
    assert sorted((r.trace_id[:2], r.evaluator, r.reviewer) for r in page) == [
        ("ab", "faithful", "carol"),
        ("ab", "json_valid", "ann"),
        ("cd", "faithful", "bob"),
    ]
    assert store.transaction(lambda db: reviews_of_traces(db, [])) == []
    reader = backend.reader()
    try:
        assert [r.reviewer for r in reader.find_reviews(ReviewFilter(trace_id=OTHER), 10)] == ["bob"]
        assert len(reader.reviews_of_traces([TRACE])) == 2
    finally:
        reader.close()
    store.close()
