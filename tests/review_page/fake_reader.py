"""An in-memory ReviewReader (the contract of monitor/results/review_models.py) over lists of models."""

from __future__ import annotations

from collections import defaultdict

from monitor.results.review_models import (
    Breakdown,
    BreakdownBy,
    BreakdownGroup,
    ResultFilter,
    ResultItem,
    ResultsPage,
    TraceDetail,
)

CURSOR_PREFIX = "fake:"


class FakeReader:
    """Results newest first, an offset cursor, breakdowns counted like the store's (tools per trace)."""

    def __init__(self, traces: list[TraceDetail], extra_results: list[ResultItem] | None = None) -> None:
        self.traces = {t.summary.trace_id: t for t in traces}
        self.items = [r for t in traces for r in t.results] + list(extra_results or [])
        self.calls: list[tuple[str, object]] = []

    def _matching(self, where: ResultFilter) -> list[ResultItem]:
        def keep(r: ResultItem) -> bool:
            fields = ("evaluator", "service", "agent", "model", "outcome", "trace_id")
            if any(getattr(where, f) is not None and getattr(r, f) != getattr(where, f) for f in fields):
                return False
            if where.since is not None and r.evaluated_at < where.since:
                return False
            return where.until is None or r.evaluated_at < where.until

        return sorted(filter(keep, self.items), key=lambda r: (-r.evaluated_at, r.evaluator, r.trace_id))

    def results(self, where: ResultFilter, limit: int, cursor: str | None = None) -> ResultsPage:
        self.calls.append(("results", (where, limit, cursor)))
        offset = 0
        if cursor is not None:
            if not cursor.startswith(CURSOR_PREFIX) or not cursor[len(CURSOR_PREFIX) :].isdigit():
                raise ValueError(f"not a cursor of this store: {cursor!r}")
            offset = int(cursor[len(CURSOR_PREFIX) :])
        matching = self._matching(where)
        end = offset + limit
        return ResultsPage(
            items=matching[offset:end], next_cursor=f"{CURSOR_PREFIX}{end}" if end < len(matching) else None
        )

    def trace(self, trace_id: str) -> TraceDetail | None:
        self.calls.append(("trace", trace_id))
        return self.traces.get(trace_id)

    def breakdown(
        self, by: BreakdownBy, evaluator: str | None = None, since: float | None = None, until: float | None = None
    ) -> Breakdown:
        self.calls.append(("breakdown", (by, evaluator, since, until)))
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for r in self._matching(ResultFilter(evaluator=evaluator, since=since, until=until)):
            if by == "tool":
                trace = self.traces.get(r.trace_id)
                values = trace.summary.tools if trace is not None and r.level == "trace" else []
            else:
                values = [getattr(r, by) or ""]
            for value in values:
                counts[value][("pass", "fail", "skip").index(r.outcome)] += 1
        groups = [
            BreakdownGroup(
                value=value,
                passed=p,
                failed=f,
                skipped=s,
                pass_ratio=p / (p + f) if p + f else None,
            )
            for value, (p, f, s) in counts.items()
        ]
        groups.sort(key=lambda g: (-g.failed, g.value))
        return Breakdown(evaluator=evaluator, by=by, since=since, until=until, groups=groups)


class BrokenReader:
    """A store that fails every read, as a corrupt or locked SQLite file does."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def results(self, where: ResultFilter, limit: int, cursor: str | None = None) -> ResultsPage:
        raise self.error

    def trace(self, trace_id: str) -> TraceDetail | None:
        raise self.error

    def breakdown(
        self, by: BreakdownBy, evaluator: str | None = None, since: float | None = None, until: float | None = None
    ) -> Breakdown:
        raise self.error
