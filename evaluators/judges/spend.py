"""What one judge request cost in USD: its reply's tokens priced as Google's (the judges call Gemini)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from ..pricing import ModelPrice, price_call
from .replies import JudgeReply

log = logging.getLogger(__name__)

PROVIDER = "google"  # genai-prices' provider id of the Gemini API (Vertex AI bills Gemini at the same list prices)


def price_reply(model: str, reply: JudgeReply, when: datetime, prices: Mapping[str, ModelPrice]) -> float | None:
    """`reply`'s cost at `when` (a `prices` override of `model` wins over the price table): 0 without tokens,
    None when the model has no known price (counted as unpriced, never as 0)."""
    if reply.input_tokens <= 0 and reply.output_tokens <= 0:
        return 0.0
    try:
        priced = price_call(model, reply.usage, provider=PROVIDER, when=when, overrides=prices)
    except Exception:  # a price table that cannot price the call must not cost the judgement
        log.warning("judge model %s: pricing failed", model, exc_info=True)
        return None
    return priced.usd if priced is not None else None


__all__ = ["PROVIDER", "price_reply"]
