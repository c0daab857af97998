"""Reply schemas shared by several builtin judges, and helpers that turn replies into bounded results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ..sdk.result import EvalResult, SkipReason

# Bounds on what a result carries: details and explanations end up in storage and in metric exemplars.
MAX_DETAIL_ITEMS = 50
MAX_DETAIL_CHARS = 300
MAX_LISTED = 3
MAX_QUOTE_CHARS = 120
MAX_EXPLANATION_CHARS = 1000

M = TypeVar("M", bound=BaseModel)


class RatingReply(BaseModel):
    """A 1–5 pointwise rating with its reasons."""

    rating: int = Field(ge=1, le=5, description="1 = worst, 5 = best, per the rubric")
    explanation: str = Field(description="why this rating, in at most three sentences, quoting the evidence")


def rating_score(rating: int) -> float:
    """A 1–5 rating as a 0–1 score: (rating − 1) / 4."""
    return min(max((rating - 1) / 4.0, 0.0), 1.0)


def shorten(text: Any, limit: int = MAX_QUOTE_CHARS) -> str:
    """`text` on one line, at most `limit` characters (an ellipsis marks a cut)."""
    one_line = " ".join(str(text).split())
    return one_line if len(one_line) <= limit else one_line[: max(limit - 1, 0)] + "…"


def listing(items: list[str], limit: int = MAX_LISTED, sep: str = "; ") -> str:
    """The first `limit` items joined, with "(+N more)" for the rest."""
    shown = sep.join(items[:limit])
    rest = len(items) - limit
    return f"{shown}{sep}(+{rest} more)" if rest > 0 else shown


def bounded_items(items: Iterable[BaseModel | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Reply items as plain dicts for `details`: at most MAX_DETAIL_ITEMS, each string shortened."""
    out: list[dict[str, Any]] = []
    for item in items:
        if len(out) >= MAX_DETAIL_ITEMS:
            break
        data = item.model_dump() if isinstance(item, BaseModel) else dict(item)
        out.append({k: shorten(v, MAX_DETAIL_CHARS) if isinstance(v, str) else v for k, v in data.items()})
    return out


def result(score: float, explanation: str, details: dict[str, Any] | None = None) -> EvalResult:
    """An EvalResult with the score clamped to [0, 1] and the explanation bounded."""
    clamped = min(max(float(score), 0.0), 1.0)
    return EvalResult(clamped, explanation=shorten(explanation, MAX_EXPLANATION_CHARS), details=details or {})


def rated(reply: RatingReply, details: dict[str, Any] | None = None) -> EvalResult:
    """The result of a 1–5 rating reply: score (rating − 1) / 4, the judge's explanation, the rating in details."""
    return result(rating_score(reply.rating), reply.explanation, {"rating": reply.rating, **(details or {})})


def graded(verdict: str, scores: Mapping[str, float], explanation: str, details: dict[str, Any]) -> EvalResult:
    """The result of a labelled verdict (e.g. completed / partial / failed) scored by `scores`."""
    return result(scores[verdict], explanation, {"verdict": verdict, **details})


def unusable(name: str, why: str) -> EvalResult:
    """A reply that validated but cannot be scored (e.g. it answered none of the configured rubrics)."""
    return EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, f"{name}: {why}")


def expect(reply: BaseModel, schema: type[M]) -> M:
    """`reply` as an instance of `schema` (the engine passes one; another model is validated into one)."""
    if isinstance(reply, schema):
        return reply
    return schema.model_validate(reply.model_dump())
