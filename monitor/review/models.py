"""The review contract: what the result store answers (ReviewReader) and what the review API, page and CLI show.

The same pydantic models are the JSON of `/api/v1/...` (and its OpenAPI document), the page's data and the
CLI's tables, so the three cannot drift. Times are Unix seconds (float, UTC). Text from traces is bounded and
masked (the `pii_leak` patterns) before it is stored; every consumer still escapes it for its medium.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import Field

from monitor.review.agreement import EvaluatorAgreement
from monitor.review.api_model import ApiModel
from monitor.review.review_models import ReviewBrief, ReviewsReader
from monitor.review.session_models import SessionReader
from monitor.review.signature_models import SignatureReader

Outcome = Literal["pass", "fail", "skip"]
BreakdownBy = Literal["service", "agent", "model", "tool", "variant"]
StepKind = Literal["agent", "llm", "tool", "retrieval", "handoff", "span"]
CostSource = Literal["span", "price_table", "override"]  # the span's own cost, genai-prices, a pricing.models entry
BreakdownSort = Literal["failures", "cost"]


class ResultFilter(ApiModel):
    """Which results to list; None means any. `since` inclusive, `until` exclusive, on the evaluation time."""

    evaluator: str | None = None
    service: str | None = None
    variant: str | None = None  # the trace's variant ("": traces without one)
    agent: str | None = None
    model: str | None = None
    outcome: Outcome | None = None
    since: float | None = None
    until: float | None = None
    trace_id: str | None = None


class ResultItem(ApiModel):
    """One evaluator's result on one dispatch unit of one trace, with excerpts of the trace it belongs to."""

    trace_id: str
    evaluated_at: float
    evaluator: str
    level: str  # trace | agent | llm | session
    outcome: Outcome
    score: float | None = None
    skip_reason: str | None = None
    explanation: str | None = None
    details: str | None = None  # JSON text, bounded
    service: str | None = None
    variant: str = ""  # the trace's variant (variants.attribute); "" when it has none or is not stored
    agent: str | None = None
    model: str | None = None
    span_id: str | None = None
    input_excerpt: str | None = None  # the trace's input, cut to a few hundred characters
    output_excerpt: str | None = None
    session_id: str | None = None  # a session-level result's conversation (None for the other levels)
    review: ReviewBrief | None = None  # the reviewer's verdict in force (service.with_reviews)


class ResultsPage(ApiModel):
    """Results newest first; `next_cursor` is opaque and None on the last page."""

    items: list[ResultItem]
    next_cursor: str | None = None


class Step(ApiModel):
    """One node of the step tree (agent → LLM call → tool call), depth-first in start order."""

    span_id: str
    parent_span_id: str | None = None
    depth: int = Field(ge=0)
    kind: StepKind
    name: str
    start_offset_ms: float = 0.0  # from the trace's first span
    duration_ms: float = 0.0
    error: str | None = None  # the span's error message (bounded), None when it succeeded
    model: str | None = None  # llm
    input_tokens: int | None = None  # llm
    output_tokens: int | None = None  # llm
    text: str | None = None  # llm: the response; tool: arguments → result; retrieval: the query (bounded)
    cost_usd: float | None = None  # llm: what the call cost; None: unpriced (no usage, or no known price)
    cost_source: CostSource | None = None  # llm: where the cost came from


class ModelUsage(ApiModel):
    model: str
    calls: int
    input_tokens: int | None  # None: unknown (no call of the model recorded its usage, e.g. failed calls)
    output_tokens: int | None
    cost_usd: float | None = None  # what its calls cost; None when none was priced
    unpriced_calls: int = 0  # calls with usage and no known price


class AgentSpend(ApiModel):
    """What one agent's LLM calls in a trace cost ("" for calls outside any agent)."""

    agent: str
    calls: int
    cost_usd: float | None = None
    unpriced_calls: int = 0


class ErrorSpan(ApiModel):
    span_id: str
    name: str
    kind: StepKind
    error: str


class TraceSummary(ApiModel):
    trace_id: str
    evaluated_at: float
    service: str | None = None
    variant: str = ""  # the agent version that produced it (variants.attribute); "" when it has none
    agents: list[str] = []
    input: str | None = None
    # the rule that chose `input` (evaluators.traces.InputSource: "root span input", "agent span input", "latest user
    # message of the first LLM request", "user message of the first LLM request"); None: not recorded
    input_source: str | None = None
    output: str | None = None
    span_count: int = 0
    duration_ms: float = 0.0
    has_errors: bool = False
    models: list[ModelUsage] = []
    tools: list[str] = []
    errors: list[ErrorSpan] = []
    steps_truncated: bool = False  # the step list was cut at the store's size cap
    cost_usd: float | None = None  # the trace's spend (its priced calls); None when no call was priced
    unpriced_calls: int = 0  # calls with usage and no known price (not in cost_usd)
    agent_spend: list[AgentSpend] = []


class TraceDetail(ApiModel):
    summary: TraceSummary
    steps: list[Step]
    results: list[ResultItem]  # every stored result of the trace: failing, skipped and (store.results: all) passing
    session_id: str | None = None  # the stored conversation the trace is a turn of (None: not a turn of one)


class BreakdownGroup(ApiModel):
    """One value of the `by` dimension: its verdicts, failures and skips over the range."""

    value: str
    passed: int
    failed: int
    skipped: int
    pass_ratio: float | None = None  # passed / (passed + failed); None without verdicts
    # spend of the stored traces in the range (whatever the evaluator): their LLM calls of this model or agent,
    # or every call of the traces of this service, variant or tool
    calls: int = 0
    cost_usd: float | None = None  # None: no call priced
    unpriced_calls: int = 0


class Breakdown(ApiModel):
    evaluator: str | None = None
    variant: str | None = None  # only the results of this variant's traces
    by: BreakdownBy
    since: float | None = None
    until: float | None = None
    sort: BreakdownSort = "failures"
    groups: list[BreakdownGroup]  # most failures first (sort: cost, the most spend first)


class EvaluatorWindow(ApiModel):
    window: str  # the metrics window label: "5m", "1h"
    samples: int
    pass_ratio: float | None = None


class EvaluatorStatus(ApiModel):
    """A configured evaluator as the daemon runs it, with its in-process window figures and alert state."""

    name: str  # the `evaluator` metric label
    kind: str  # rule | llm_judge | ...
    level: str
    threshold: float | None = None
    sampling: float = 1.0
    alert_min_pass_ratio: float | None = None
    alert_window: float | None = None
    alert_state: Literal["inactive", "pending", "firing"] | None = None  # worst over services; None: no alert
    slo_objective: float | None = None
    windows: list[EvaluatorWindow] = []  # over every variant
    variant_windows: dict[str, list[EvaluatorWindow]] = {}  # the same windows per variant (`variant` label value)
    agreement: EvaluatorAgreement | None = None  # reviewers' agreement (reviews in force); None: never reviewed


class VariantSide(ApiModel):
    """One side of a live comparison over its window: results with a verdict, of which passed."""

    variant: str
    passed: int
    total: int
    pass_ratio: float | None  # None while the side has no result


class PairwiseCounts(ApiModel):
    """The pairwise judge of the same two variants: the candidate's wins, ties and losses so far."""

    evaluator: str
    win: int = 0
    tie: int = 0
    loss: int = 0


class VariantComparison(ApiModel):
    """A configured comparison (variants.compare) now: the candidate against the baseline over `window`
    seconds, at significance level `alpha`; values that need both sides are None until both have results."""

    evaluator: str
    baseline: VariantSide
    candidate: VariantSide
    window: float
    min_samples: int
    alpha: float
    delta: float | None  # candidate pass ratio - baseline's
    delta_lower: float | None
    delta_upper: float | None
    p_value_pass_rate: float | None
    p_value_scores: float | None  # None without scores on both sides
    verdict: Literal[-1, 0, 1]
    reason: Literal["worse", "better", "no_significant_difference", "insufficient_samples"]
    pairwise: list[PairwiseCounts] = []  # the pairwise judges of the same two variants


class ReviewReader(SignatureReader, SessionReader, ReviewsReader, Protocol):
    """Read side of the result store, for the review API, page and CLI (`--store FILE`); the failure signature
    reads are `SignatureReader`'s, the conversation reads `SessionReader`'s, the reviewers' verdicts
    `ReviewsReader`'s."""

    def results(self, where: ResultFilter, limit: int, cursor: str | None = None) -> ResultsPage:
        """Results matching `where`, newest first; ValueError for a cursor this store did not issue."""
        ...

    def trace(self, trace_id: str) -> TraceDetail | None:
        """Everything stored about one trace; None when it is unknown (never stored, or pruned)."""
        ...

    def breakdown(
        self,
        by: BreakdownBy,
        evaluator: str | None = None,
        since: float | None = None,
        until: float | None = None,
        variant: str | None = None,
        sort: BreakdownSort = "failures",
    ) -> Breakdown:
        """Verdict counts per service, agent, model, tool or variant over the range, of one variant's traces when
        `variant` is given (a trace counts for every tool it called, at trace level; agent and model come from the
        result's own dispatch unit when it has one), with the spend of the stored traces in the range; most
        failures first, or (`sort` cost) the most spend first."""
        ...
