"""What each LLM call of a trace used and cost, for the spend and token metrics (`store.rows.CallFigures`)."""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.pricing import ModelPrice, call_cost, token_kinds
from evaluators.traces.spans import LLMSpan
from monitor.store.rows import CallFigures


def call_figures(call: LLMSpan, prices: Mapping[str, ModelPrice]) -> CallFigures:
    """`call`'s tokens by kind and its cost: the span's own cost, else priced from the table or `prices`."""
    usage = call.usage
    cost = call_cost(call, prices)
    return CallFigures(
        call.model,
        call.agent_name or "",
        cost.provider if cost is not None else call.provider or "",
        not call.has_error,
        token_kinds(usage) if usage is not None else None,
        cost.usd if cost is not None else None,
    )
