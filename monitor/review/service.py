"""The review's read operations over a ReviewReader, framework-free: the `/api/v1` handlers and the CLI's
`--store` source call these same functions, so both answer alike.

Each raises a ReviewError: BadRequest for bad parameters (a cursor the reader refuses included), NotFound for
an unknown trace or session, Unavailable when there is no reader (the store is disabled) or SQLite fails.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from monitor.config.signatures import SignaturesConfig
from monitor.review.api_params import (
    BadRequest,
    NotFound,
    Unavailable,
    breakdown_query,
    parse_signature_id,
    parse_trace_id,
    results_query,
    signatures_query,
)
from monitor.review.models import Breakdown, ResultItem, ResultsPage, ReviewReader, TraceDetail
from monitor.review.review_models import ReviewHistory, ReviewsPage, brief_of, review_record
from monitor.review.review_params import history_query, reviews_query
from monitor.review.session_models import SessionDetail, SessionsPage
from monitor.review.session_params import parse_session_id, sessions_query
from monitor.review.signature_models import SignatureDetail, SignaturesPage
from monitor.store.health import StoreUnavailable
from monitor.store.reviews import ResultKey, StoredReview

STORE_DISABLED = "the result store is disabled (store.enabled: false)"
RESOLVE_AFTER: float = SignaturesConfig.model_fields["resolve_after"].default  # signatures.resolve_after


class ReviewService:
    """The review operations on `reader` (None: unavailable, for the reason `unavailable`); `clock` is the
    "now" of relative times. Safe to call from worker threads when the reader is."""

    def __init__(
        self,
        reader: ReviewReader | None,
        unavailable: str = STORE_DISABLED,
        clock: Callable[[], float] = time.time,
        resolve_after: float = RESOLVE_AFTER,
    ) -> None:
        self.reader = reader
        self.unavailable = unavailable
        self.clock = clock
        self.resolve_after = resolve_after  # signatures.resolve_after: a signature's status

    @contextmanager
    def _reading(self) -> Iterator[ReviewReader]:
        if self.reader is None:
            raise Unavailable(f"review unavailable: {self.unavailable}")
        try:
            yield self.reader
        except (sqlite3.Error, StoreUnavailable) as exc:
            raise Unavailable(f"review unavailable: {type(exc).__name__}: {exc}") from exc

    def results(self, pairs: Iterable[tuple[str, str]]) -> ResultsPage:
        where, limit, cursor = results_query(pairs, self.clock())
        with self._reading() as reader:
            try:
                page = reader.results(where, limit, cursor)
            except ValueError as exc:
                if cursor is None:
                    raise
                raise BadRequest(f"invalid cursor: {exc}") from exc
            reviews = reader.reviews_of_traces(sorted({i.trace_id for i in page.items}))
        return page.model_copy(update={"items": with_reviews(page.items, reviews)}) if reviews else page

    def signatures(self, pairs: Iterable[tuple[str, str]]) -> SignaturesPage:
        now = self.clock()
        query = signatures_query(pairs, now)
        with self._reading() as reader:
            try:
                return reader.signatures(query.where, query.limit, query.cursor, now, self.resolve_after)
            except ValueError as exc:
                if query.cursor is None:
                    raise
                raise BadRequest(f"invalid cursor: {exc}") from exc

    def signature(self, signature_id: str, pairs: Iterable[tuple[str, str]] = ()) -> SignatureDetail:
        ident = parse_signature_id(signature_id)
        now = self.clock()
        query = signatures_query(pairs, now, one=True)
        with self._reading() as reader:
            try:
                detail = reader.signature(ident, query.where, query.limit, query.cursor, now, self.resolve_after)
            except ValueError as exc:
                if query.cursor is None:
                    raise
                raise BadRequest(f"invalid cursor: {exc}") from exc
        if detail is None:
            raise NotFound(f"unknown signature {ident}: no failure with it in the store")
        return detail

    def trace(self, trace_id: str) -> TraceDetail:
        tid = parse_trace_id(trace_id)
        with self._reading() as reader:
            detail = reader.trace(tid)
            if detail is None:
                raise NotFound(f"unknown trace {tid}: never stored, or pruned after the store's retention")
            session_id = reader.session_of_trace(tid)  # the conversation it is a turn of, if stored
            reviews = reader.reviews_of_trace(tid)
        update: dict[str, object] = {"results": with_reviews(detail.results, reviews)} if reviews else {}
        if session_id is not None:
            update["session_id"] = session_id
        return detail.model_copy(update=update) if update else detail

    def reviews(self, pairs: Iterable[tuple[str, str]]) -> ReviewsPage:
        """The reviews in force matching the query, newest first."""
        where, limit = reviews_query(pairs, self.clock())
        with self._reading() as reader:
            found = reader.find_reviews(where, limit)
        return ReviewsPage(items=[review_record(r) for r in found])

    def review_history(self, pairs: Iterable[tuple[str, str]]) -> ReviewHistory:
        """Every review of the result the query names, newest first (empty when it was never reviewed)."""
        key = history_query(pairs)
        with self._reading() as reader:
            found = reader.review_history(key)
        return ReviewHistory(**key._asdict(), items=[review_record(r) for r in found])

    def sessions(self, pairs: Iterable[tuple[str, str]]) -> SessionsPage:
        query = sessions_query(pairs, self.clock())
        with self._reading() as reader:
            try:
                return reader.sessions(query.where, query.limit, query.cursor)
            except ValueError as exc:
                if query.cursor is None:
                    raise
                raise BadRequest(f"invalid cursor: {exc}") from exc

    def session(self, session_id: str) -> SessionDetail:
        ident = parse_session_id(session_id)
        with self._reading() as reader:
            detail = reader.session(ident)
        if detail is None:
            raise NotFound(f"unknown session {ident!r}: never stored, or pruned after the store's retention")
        return detail

    def breakdown(self, pairs: Iterable[tuple[str, str]]) -> Breakdown:
        query = breakdown_query(pairs, self.clock())
        with self._reading() as reader:
            return reader.breakdown(query.by, query.evaluator, query.since, query.until, query.variant, query.sort)


def with_reviews(results: list[ResultItem], reviews: list[StoredReview]) -> list[ResultItem]:
    """`results`, each carrying the review in force of its verdict (if any) among `reviews` (the page, too, joins
    `reader.reviews_of_trace(s)` to what it shows with this)."""
    by_key = {r.key: r for r in reviews}
    out = []
    for item in results:
        found = by_key.get(ResultKey(item.trace_id, item.evaluator, item.level, item.span_id or ""))
        out.append(item if found is None else item.model_copy(update={"review": brief_of(found)}))
    return out
