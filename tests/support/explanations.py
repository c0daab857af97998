"""A web-layer stand-in for the daemon's explainer (monitor.explain.service.Explainer: an in-process seam whose
real engine is tested end to end on its own) and the explanations it answers, shared by the API, page and CLI
tests; and a failure signature for the pages to explain."""

from __future__ import annotations

import threading

from monitor.explain.model import DimensionValue, ExplainQuery, Explanation, Factor
from monitor.review.signature_models import SignatureItem

HOSTILE = '<script>alert(1)</script>" onmouseover="x'
SIGNATURE = "3f2a9c0d1e4b5a67"


def factor(pairs: list[tuple[str, str]], share: float, reference: float, lift: float | None, q: float) -> Factor:
    return Factor(
        values=[DimensionValue(dimension=d, value=v) for d, v in pairs],
        slice_traces=round(share * 100),
        slice_share=share,
        reference_traces=round(reference * 900),
        reference_share=reference,
        lift=lift,
        p_value=q / 10,
        q_value=q,
        coverage=share,
    )


def sample_explanation(query: ExplainQuery, *factors: Factor, note: str | None = None) -> Explanation:
    """The failures of the query's evaluator (or the kind its fields make): `factors`, else the sample's three."""
    kind = (
        "signature"
        if query.signature
        else "drift"
        if query.reference_since is not None
        else "failures"
        if query.evaluator
        else "filter"
    )
    chosen = list(factors) or [
        factor([("model", "gemini-2.5-pro"), ("tool", "convert_currency")], 0.92, 0.0657, 14.0, 1e-8),
        factor([("tenant", "acme")], 0.3, 0.0, None, 0.0004),
        factor([("service", "checkout")], 0.5, 0.2, 2.5, 0.003),
    ]
    return Explanation(
        kind=kind,
        query=query,
        slice=f"the failures of {query.evaluator}" if query.evaluator else "the slice",
        reference="its passing traces",
        slice_traces=100,
        reference_traces=900,
        tested=42,
        fdr=0.01,
        factors=chosen if note is None else [],
        note=note,
    )


class StubExplainer:
    """`explain(query)` as the daemon's explainer: `answer(query)` when given (an exception to raise, or an
    explanation), else the sample; records each query and the thread it ran on."""

    def __init__(self, answer: Explanation | Exception | None = None) -> None:
        self.answer = answer
        self.queries: list[ExplainQuery] = []
        self.threads: list[str] = []

    def explain(self, query: ExplainQuery) -> Explanation:
        self.queries.append(query)
        self.threads.append(threading.current_thread().name)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer if self.answer is not None else sample_explanation(query)


def signature_item(ident: str = SIGNATURE, evaluator: str = "tool_success_rate") -> SignatureItem:
    return SignatureItem(
        id=ident,
        version="1",
        evaluator=evaluator,
        level="trace",
        agent="planner",
        step_kind="tool",
        step_name="convert_currency",
        error_type="TimeoutError",
        template="timeout talking to <*>",
        example="timeout talking to rates-api",
        first_seen=1_764_700_000.0,
        last_seen=1_764_770_000.0,
        count=40,
        status="ongoing",
        results=12,
        traces=10,
        previous_results=6,
        growth=1.0,
        services=["checkout"],
    )
