"""The failure signature reads of the store's review reader (a mixin of `sqlite_reader.StoreReviewReader`, so
both databases answer alike; the SQL is in `signature_sql.py`).

A database from before schema version 4 has no signatures: its pages are empty. Costs: `signatures` groups the
failing results of the range (and of the previous range) by signature, then reads the page's signature rows and
trends; `signature` walks that signature's results by its index; `candidate_signatures` groups the two variants'
failing results of the window.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from monitor.review.cursor import COUNT, TEXT, TIME, decode_cursor, encode_cursor
from monitor.review.signature_models import (
    CandidateSignature,
    CandidateSignatures,
    SignatureDetail,
    SignatureFilter,
    SignatureItem,
    SignaturesPage,
    SignatureTrace,
    SignatureVerdict,
    growth,
    impact_key,
    new_in_candidate,
    status_of,
    trend_points,
    trend_step,
)
from monitor.review.signature_sql import (
    MAX_CURSOR_CHARS,
    counts_query,
    rows_query,
    trace_variants_query,
    traces_query,
    trend_query,
    variant_counts_query,
    variant_traces_query,
    verdicts_query,
)
from monitor.review.sql import Columns
from monitor.store.statements import execute

T = TypeVar("T")
MAX_PAGE = 200  # signatures or traces per page
Counts = dict[str, tuple[int, int]]  # signature → (results, traces)


class SignatureReads:
    """`signatures`, `signature` and `candidate_signatures` over `_run(read)` and `_columns_of(db)`."""

    _run: Callable[..., Any]
    _columns_of: Callable[[Any], Columns]

    def signatures(
        self, where: SignatureFilter, limit: int, cursor: str | None, now: float, resolve_after: float
    ) -> SignaturesPage:
        """Signatures by impact over the range of `where` (a cursor's own range when given; ValueError for a
        cursor this reader did not issue); statuses as of `now`."""
        offset = 0
        if cursor is not None:
            since, until, offset = decode_cursor(cursor, (TIME, TIME, COUNT), MAX_CURSOR_CHARS)
            where = where.model_copy(update={"since": since, "until": until})
        limit = min(max(int(limit), 1), MAX_PAGE)

        def read(db: Any) -> SignaturesPage:
            cols = self._columns_of(db)
            if not cols.signatures:
                return SignaturesPage(since=where.since, until=where.until, items=[])
            current = _counts(db, counts_query(where, cols, where.since, where.until))
            length = where.until - where.since
            previous = _counts(db, counts_query(where, cols, where.since - length, where.since))
            ranked = sorted(current, key=lambda s: impact_key(s, current[s][0], previous.get(s, (0, 0))[0]))
            ids = ranked[offset : offset + limit]
            items = _items(db, cols, where, ids, current, previous, (now, resolve_after))
            more = offset + limit < len(ranked)
            following = encode_cursor([where.since, where.until, offset + limit]) if more else None
            return SignaturesPage(since=where.since, until=where.until, items=items, next_cursor=following)

        return self._run(read)

    def signature(
        self,
        signature: str,
        where: SignatureFilter,
        limit: int,
        cursor: str | None,
        now: float,
        resolve_after: float,
    ) -> SignatureDetail | None:
        """One signature over the range with its traces (one row each, with every failing verdict), newest
        first; None when the store has no such signature."""
        after: tuple[float, str] | None = None
        if cursor is not None:
            since, until, at, trace_id = decode_cursor(cursor, (TIME, TIME, TIME, TEXT), MAX_CURSOR_CHARS)
            where, after = where.model_copy(update={"since": since, "until": until}), (at, trace_id)
        limit = min(max(int(limit), 1), MAX_PAGE)

        def read(db: Any) -> SignatureDetail | None:
            cols = self._columns_of(db)
            if not cols.signatures:
                return None
            length = where.until - where.since
            current = _counts(db, counts_query(where, cols, where.since, where.until, signature))
            previous = _counts(db, counts_query(where, cols, where.since - length, where.since, signature))
            items = _items(db, cols, where, [signature], current, previous, (now, resolve_after))
            if not items:
                return None
            found = execute(db, *traces_query(signature, where, after, limit + 1)).fetchall()
            traces = _traces(db, cols, found[:limit])
            following = None
            if len(found) > limit:
                trace_id, at = found[limit - 1]
                following = encode_cursor([where.since, where.until, float(at), trace_id])
            return SignatureDetail(signature=items[0], traces=traces, next_cursor=following)

        return self._run(read)

    def candidate_signatures(
        self, candidate: str, baseline: str, since: float, until: float, limit: int = 20
    ) -> CandidateSignatures:
        """The signatures seen only, or far more often per stored trace, in the candidate over [since, until)."""

        def read(db: Any) -> CandidateSignatures:
            cols = self._columns_of(db)
            variants = [candidate, baseline]
            totals: dict[str, int] = {}
            per: dict[str, dict[str, int]] = {}
            if cols.signatures:
                totals = {str(v): n for v, n in execute(db, *variant_traces_query(cols, variants, since, until))}
                for sig, variant, n in execute(db, *variant_counts_query(cols, variants, since, until)):
                    per.setdefault(sig, {})[str(variant)] = n
            found = _candidate_items(db, per, totals, candidate, baseline)
            found.sort(key=lambda c: (-c.candidate_results, c.id))
            return CandidateSignatures(
                candidate=candidate,
                baseline=baseline,
                since=since,
                until=until,
                candidate_traces=totals.get(candidate, 0),
                baseline_traces=totals.get(baseline, 0),
                items=found[:limit],
            )

        return self._run(read)


def _counts(db: Any, query: tuple) -> Counts:
    return {sig: (results, traces) for sig, results, traces in execute(db, *query)}


def _rows(db: Any, ids: Sequence[str]) -> dict[str, tuple]:
    return {row[0]: row for row in execute(db, *rows_query(ids))} if ids else {}


def _items(
    db: Any,
    cols: Columns,
    where: SignatureFilter,
    ids: Sequence[str],
    current: Counts,
    previous: Counts,
    clock: tuple[float, float],
) -> list[SignatureItem]:
    """The items of `ids` (in that order) with their figures and trends; ids without a signature row are left out."""
    if not ids:
        return []
    rows = _rows(db, ids)
    step, points = trend_step(where.since, where.until), trend_points(where.since, where.until)
    trends = {sig: [0] * points for sig in ids}
    for sig, bucket, n in execute(db, *trend_query(where, cols, ids, step)):
        if sig in trends:
            trends[sig][min(max(int(bucket), 0), points - 1)] += n
    items = []
    for sig in ids:
        if sig not in rows:
            continue
        results, traces = current.get(sig, (0, 0))
        before = previous.get(sig, (0, 0))[0]
        figures = {"results": results, "traces": traces, "previous_results": before, "growth": growth(results, before)}
        trend = {"trend": trends[sig], "trend_start": where.since, "trend_step": step}
        items.append(_item(rows[sig], clock, {**figures, **trend}))
    return items


def _item(row: tuple, clock: tuple[float, float], extra: dict[str, Any]) -> SignatureItem:
    ident, version, evaluator, level, agent, kind, name, error_type, template, example = row[:10]
    first, last, count, services, agents, models, variants, versions, examples, regressed = row[10:]
    now, resolve_after = clock
    return SignatureItem(
        id=ident,
        version=version,
        evaluator=evaluator,
        level=level,
        agent=agent,
        step_kind=kind,
        step_name=name,
        error_type=error_type,
        template=template,
        example=example,
        first_seen=first,
        last_seen=last,
        count=count,
        status=status_of(first, last, regressed, now, resolve_after),
        regressed_at=regressed,
        services=_names(services),
        agents=_names(agents),
        models=_names(models),
        variants=_names(variants),
        versions=_names(versions),
        example_traces=_names(examples),
        **extra,
    )


def _names(text: str | None) -> list[str]:
    """A JSON array column as strings ([] for anything else)."""
    try:
        values = json.loads(text) if text else []
    except ValueError:
        return []
    return [str(v) for v in values] if isinstance(values, list) else []


def _traces(db: Any, cols: Columns, found: Sequence[tuple]) -> list[SignatureTrace]:
    ids = [trace_id for trace_id, _ in found]
    if not ids:
        return []
    verdicts: dict[str, list[SignatureVerdict]] = {trace_id: [] for trace_id in ids}
    services: dict[str, str | None] = {}
    for trace_id, at, evaluator, level, explanation, score, sig, agent, model, span_id, service in execute(
        db, *verdicts_query(ids)
    ):
        services.setdefault(trace_id, service)
        verdicts[trace_id].append(
            SignatureVerdict(
                evaluator=evaluator,
                level=level,
                evaluated_at=at,
                explanation=explanation,
                score=score,
                signature=sig,
                agent=agent,
                model=model,
                span_id=span_id,
            )
        )
    stored = {
        trace_id: (service, variant) for trace_id, service, variant in execute(db, *trace_variants_query(ids, cols))
    }
    return [
        SignatureTrace(
            trace_id=trace_id,
            evaluated_at=at,
            service=stored.get(trace_id, (services.get(trace_id), ""))[0],
            variant=stored.get(trace_id, (None, ""))[1] or "",
            verdicts=verdicts[trace_id],
        )
        for trace_id, at in found
    ]


def _candidate_items(
    db: Any, per: dict[str, dict[str, int]], totals: dict[str, int], candidate: str, baseline: str
) -> list[CandidateSignature]:
    def rate(n: int, variant: str) -> float:
        return n / max(totals.get(variant, 0), 1)

    chosen = {}
    for sig, by_variant in per.items():
        mine, theirs = by_variant.get(candidate, 0), by_variant.get(baseline, 0)
        if new_in_candidate(rate(mine, candidate), rate(theirs, baseline), theirs):
            chosen[sig] = (mine, theirs)
    busiest = sorted(chosen, key=lambda s: (-chosen[s][0], s))[:MAX_PAGE]
    chosen = {sig: chosen[sig] for sig in busiest}
    rows = _rows(db, busiest)
    return [
        CandidateSignature(
            id=sig,
            evaluator=rows[sig][2],
            step_kind=rows[sig][5],
            step_name=rows[sig][6],
            error_type=rows[sig][7],
            template=rows[sig][8],
            candidate_results=mine,
            baseline_results=theirs,
            candidate_per_trace=rate(mine, candidate),
            baseline_per_trace=rate(theirs, baseline),
            only_in_candidate=theirs == 0,
        )
        for sig, (mine, theirs) in chosen.items()
        if sig in rows
    ]
