"""An in-memory ReviewReader that behaves as the protocol says: filters, newest first, a keyset cursor.

It records every call (`calls`) so tests can check what reached the reader, and `fail_with` makes every
call raise (an sqlite3.Error, to stand for a failing store).
"""

from __future__ import annotations

import base64
import binascii
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from monitor.review.models import (
    Breakdown,
    BreakdownBy,
    BreakdownGroup,
    ResultFilter,
    ResultItem,
    ResultsPage,
    Step,
    TraceDetail,
    TraceSummary,
)
from monitor.review.session_models import SessionDetail, SessionFilter, SessionsPage
from monitor.review.signature_models import (
    CandidateSignatures,
    SignatureDetail,
    SignatureFilter,
    SignatureItem,
    SignaturesPage,
)


def _cursor(item: ResultItem, seq: int) -> str:
    return base64.urlsafe_b64encode(f"{item.evaluated_at!r}|{seq}".encode()).decode()


def _decode(cursor: str) -> tuple[float, int]:
    try:
        stamp, seq = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        return float(stamp), int(seq)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError(f"not a cursor of this store: {cursor[:20]!r}") from None


@dataclass
class FakeReader:
    items: list[ResultItem] = field(default_factory=list)
    traces: dict[str, TraceDetail] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    fail_with: Exception | None = None
    signature_items: list[SignatureItem] = field(default_factory=list)  # in impact order
    session_details: list[SessionDetail] = field(default_factory=list)  # newest completed first

    @classmethod
    def of(cls, traces: list[TraceDetail], extra_results: list[ResultItem] | None = None) -> FakeReader:
        """A reader holding `traces` and their results, plus results of traces it does not hold."""
        items = [r for t in traces for r in t.results] + list(extra_results or [])
        return cls(items=items, traces={t.summary.trace_id: t for t in traces})

    def _enter(self, name: str, args: Any) -> None:
        self.calls.append((name, args))
        if self.fail_with is not None:
            raise self.fail_with

    def signatures(
        self, where: SignatureFilter, limit: int, cursor: str | None, now: float, resolve_after: float
    ) -> SignaturesPage:
        self._enter("signatures", (where, limit, cursor))
        if cursor is not None and cursor != "next":
            raise ValueError("not a cursor of this store")
        chosen = [s for s in self.signature_items if where.evaluator in (None, s.evaluator)]
        start = limit if cursor == "next" else 0
        more = "next" if cursor is None and len(chosen) > limit else None
        return SignaturesPage(
            since=where.since, until=where.until, items=chosen[start : start + limit], next_cursor=more
        )

    def signature(
        self, signature: str, where: SignatureFilter, limit: int, cursor: str | None, now: float, resolve_after: float
    ) -> SignatureDetail | None:
        self._enter("signature", (signature, where, limit, cursor))
        found = next((s for s in self.signature_items if s.id == signature), None)
        return None if found is None else SignatureDetail(signature=found, traces=[])

    def candidate_signatures(
        self, candidate: str, baseline: str, since: float, until: float, limit: int = 20
    ) -> CandidateSignatures:
        self._enter("candidate_signatures", (candidate, baseline))
        return CandidateSignatures(
            candidate=candidate,
            baseline=baseline,
            since=since,
            until=until,
            candidate_traces=0,
            baseline_traces=0,
            items=[],
        )

    def sessions(self, where: SessionFilter, limit: int, cursor: str | None = None) -> SessionsPage:
        self._enter("sessions", (where, limit, cursor))
        if cursor is not None:
            raise ValueError("not a cursor of this store")
        chosen = [d.session for d in self.session_details if where.service in (None, d.session.service)]
        return SessionsPage(items=chosen[:limit])

    def session(self, session_id: str) -> SessionDetail | None:
        self._enter("session", session_id)
        return next((d for d in self.session_details if d.session.session_id == session_id), None)

    def session_of_trace(self, trace_id: str) -> str | None:  # not recorded: the trace page asks it in passing
        found = (d for d in self.session_details if trace_id in d.session.trace_ids)
        return next((d.session.session_id for d in found), None)

    def reviews_of_trace(self, trace_id: str) -> list[Any]:  # reviews are read from a real store in their tests
        return []

    def reviews_of_traces(self, trace_ids: list[str]) -> list[Any]:
        return []

    def find_reviews(self, where: Any, limit: int) -> list[Any]:
        return []

    def review_history(self, key: Any) -> list[Any]:
        return []

    def _ordered(self) -> list[tuple[int, ResultItem]]:
        """(insertion number, item) newest first; the number breaks ties between equal times."""
        return sorted(enumerate(self.items), key=lambda pair: (pair[1].evaluated_at, pair[0]), reverse=True)

    @staticmethod
    def _matches(item: ResultItem, where: ResultFilter) -> bool:
        for name in ("evaluator", "service", "variant", "agent", "model", "outcome", "trace_id"):
            wanted = getattr(where, name)
            if wanted is not None and getattr(item, name) != wanted:
                return False
        if where.since is not None and item.evaluated_at < where.since:
            return False
        return where.until is None or item.evaluated_at < where.until

    def results(self, where: ResultFilter, limit: int, cursor: str | None = None) -> ResultsPage:
        self._enter("results", (where, limit, cursor))
        after = _decode(cursor) if cursor is not None else None
        page: list[tuple[int, ResultItem]] = []
        for seq, item in self._ordered():
            if after is not None and (item.evaluated_at, seq) >= after:
                continue
            if self._matches(item, where):
                page.append((seq, item))
                if len(page) == limit + 1:
                    break
        more = len(page) > limit
        page = page[:limit]
        last = page[-1] if more else None
        return ResultsPage(items=[i for _, i in page], next_cursor=_cursor(last[1], last[0]) if last else None)

    def trace(self, trace_id: str) -> TraceDetail | None:
        self._enter("trace", trace_id)
        return self.traces.get(trace_id)

    def breakdown(
        self,
        by: BreakdownBy,
        evaluator: str | None = None,
        since: float | None = None,
        until: float | None = None,
        variant: str | None = None,
        sort: str = "failures",
    ) -> Breakdown:
        self._enter("breakdown", (by, evaluator, since, until, variant) + ((sort,) if sort != "failures" else ()))
        where = ResultFilter(evaluator=evaluator, variant=variant, since=since, until=until)
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for item in self.items:
            if not self._matches(item, where):
                continue
            if by == "tool":
                detail = self.traces.get(item.trace_id)
                values = detail.summary.tools if detail is not None else []
            else:
                values = [getattr(item, by) or ""]
            for value in values:
                counts[value][("pass", "fail", "skip").index(item.outcome)] += 1
        groups = [
            BreakdownGroup(value=v, passed=p, failed=f, skipped=s, pass_ratio=p / (p + f) if p + f else None)
            for v, (p, f, s) in counts.items()
        ]
        groups.sort(key=lambda g: (-g.failed, g.value))
        return Breakdown(evaluator=evaluator, variant=variant, by=by, since=since, until=until, groups=groups)


def item(n: int, **fields: Any) -> ResultItem:
    """A result numbered `n` (evaluated at 1_700_000_000 + n), failing unless told otherwise."""
    values: dict[str, Any] = {
        "trace_id": f"{n:032x}",
        "evaluated_at": 1_700_000_000.0 + n,
        "evaluator": "error_free",
        "level": "trace",
        "outcome": "fail",
        "score": 0.0,
        "explanation": f"result {n}",
        "service": "checkout",
    }
    values.update(fields)
    return ResultItem(**values)


def trace_detail(trace_id: str, results: list[ResultItem], tools: list[str] | None = None) -> TraceDetail:
    """A small trace: agent → LLM call → failing tool call."""
    summary = TraceSummary(
        trace_id=trace_id,
        evaluated_at=1_700_000_000.0,
        service="checkout",
        agents=["planner"],
        input="where is my order?",
        output="it ships tomorrow",
        span_count=3,
        duration_ms=1250.0,
        has_errors=True,
        tools=tools or ["lookup"],
    )
    steps = [
        Step(span_id="01" * 8, depth=0, kind="agent", name="planner", duration_ms=1250.0),
        Step(
            span_id="02" * 8,
            parent_span_id="01" * 8,
            depth=1,
            kind="llm",
            name="chat gpt-4o",
            model="gpt-4o",
            input_tokens=120,
            output_tokens=30,
            duration_ms=800.0,
            text="calling lookup",
        ),
        Step(
            span_id="03" * 8,
            parent_span_id="02" * 8,
            depth=2,
            kind="tool",
            name="lookup",
            duration_ms=40.0,
            error="timeout talking to orders-db",
            text='{"order": 7} → null',
        ),
    ]
    return TraceDetail(summary=summary, steps=steps, results=results)
