"""Gemini's safety filters and the judge client: the safety settings every request carries, and the blocks read
from a reply.

A judge must read harmful content to judge it (the `safety` judge above all), so the client sends
`JudgeSettings.safety_settings` (by default every adjustable filter `OFF`). What Gemini still blocks (its
non-adjustable protections, or a filter the config left on) comes back in one of two documented forms: no
candidate and `promptFeedback.blockReason` (the prompt was blocked), or a candidate whose `finishReason` is a
block (`SAFETY`, `PROHIBITED_CONTENT`, `BLOCKLIST`, `SPII`, ...), its content emptied or cut. `block_of` reads
both into a `Block`: its reason (a metric label) and a short description (which categories were rated).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.genai import types

from .settings import HarmBlockThreshold, HarmCategory

# finishReason values that mean a filter stopped the reply (google-genai `types.FinishReason`), not the model.
BLOCK_FINISH_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
_LABEL = re.compile(r"^[A-Z][A-Z0-9_]{0,39}$")


@dataclass(frozen=True, slots=True)
class Block:
    """A reply Gemini blocked: `reason` its blockReason or finishReason (safe for a metric label: an unexpected
    value is "OTHER"), `prompt` whether the prompt was blocked (else the reply), `message` a short description."""

    reason: str
    prompt: bool
    message: str


def safety_settings(settings: Mapping[HarmCategory, HarmBlockThreshold]) -> list[types.SafetySetting]:
    """The request's `safetySettings` for the configured category → threshold mapping."""
    return [
        types.SafetySetting(category=types.HarmCategory(category), threshold=types.HarmBlockThreshold(threshold))
        for category, threshold in settings.items()
    ]


def block_of(response: types.GenerateContentResponse) -> Block | None:
    """The block of `response` (its prompt's or its first candidate's), or None when nothing was blocked."""
    candidate = response.candidates[0] if response.candidates else None
    if candidate is None:
        feedback = response.prompt_feedback
        reason = _text(feedback.block_reason) if feedback else ""
        if not reason:
            return None
        ratings = _rated(feedback.safety_ratings if feedback else None)
        return Block(_label(reason), True, f"the prompt was blocked: {reason}{ratings}")
    finish = _text(candidate.finish_reason)
    if finish not in BLOCK_FINISH_REASONS:
        return None
    ratings = _rated(candidate.safety_ratings)
    return Block(_label(finish), False, f"the reply was blocked: finish reason {finish}{ratings}")


def _rated(ratings: Sequence[types.SafetyRating] | None) -> str:
    """` (HARM_CATEGORY_X HIGH, ...)`: the ratings that blocked, else those above NEGLIGIBLE; "" for none."""
    rated = [r for r in ratings or () if r.blocked] or [
        r for r in ratings or () if _text(r.probability) not in ("", "NEGLIGIBLE", "HARM_PROBABILITY_UNSPECIFIED")
    ]
    described = [f"{_text(r.category)} {_text(r.probability)}".strip() for r in rated[:6]]
    return f" ({', '.join(described)})" if described else ""


def _label(reason: str) -> str:
    return reason if _LABEL.match(reason) else "OTHER"


def _text(value: Any) -> str:
    if value is None:
        return ""
    return str(getattr(value, "value", value))


__all__ = ["BLOCK_FINISH_REASONS", "Block", "block_of", "safety_settings"]
