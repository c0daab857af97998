"""What each LLM call of a trace used and cost, for the spend and token metrics (`monitor.outcomes.CallFigures`)."""

from __future__ import annotations

from evaluators.pricing import CallCost, token_kinds
from evaluators.traces.spans import LLMSpan
from monitor.outcomes import CallFigures


def call_figures(call: LLMSpan, cost: CallCost | None) -> CallFigures:
    """`call`'s tokens by kind and its `cost` (`evaluators.pricing.call_cost`: the span's own cost, else priced
    from the table or the `pricing.models` overrides)."""
    usage = call.usage
    return CallFigures(
        call.model,
        call.agent_name or "",
        cost.provider if cost is not None else call.provider or "",
        not call.has_error,
        token_kinds(usage) if usage is not None else None,
        cost.usd if cost is not None else None,
    )
