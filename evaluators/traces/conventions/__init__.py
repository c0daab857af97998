"""Convention normalizers: one module per instrumentation convention, consulted in detection order.

A span may match several conventions; each facet (kind, model, messages, ...) is taken from the
first matching convention that has it, so every representation present is read.
"""

from __future__ import annotations

from typing import Any

from ..records import SpanRecord
from .adk import GoogleADK
from .base import Convention, Retrieval, SpanKind, TokenUsage, ToolInvocation
from .errors import NORMALIZER_ERRORS, normalizer_errors
from .openinference import OpenInference
from .otel_genai import OTelGenAI
from .pydantic_ai import PydanticAI
from .strands import Strands
from .traceloop import Traceloop
from .vercel import VercelAI

# Order matters: the most specific conventions first, the OTel GenAI fallback last.
CONVENTIONS: tuple[Convention, ...] = (
    OpenInference(),
    Traceloop(),
    GoogleADK(),
    VercelAI(),
    PydanticAI(),
    Strands(),
    OTelGenAI(),
)


def detect(span: SpanRecord) -> tuple[Convention, ...]:
    """Every convention whose markers the span carries (the OTel fallback always matches); one whose `detect`
    raises is left out for this span, counted and logged (see errors.py), and the others read it."""
    found: list[Convention] = []
    for convention in CONVENTIONS:
        try:
            matches = convention.detect(span)
        except Exception as exc:  # a normalizer bug must never take a trace down, nor go unseen
            NORMALIZER_ERRORS.record(convention.name, "detect", exc)
            continue
        if matches:
            found.append(convention)
    return tuple(found)


def first(facet: str, span: SpanRecord, conventions: tuple[Convention, ...]) -> Any:
    """The first non-None answer to `facet` among the span's conventions; a failing one is skipped, counted and
    logged (see errors.py)."""
    for convention in conventions:
        try:
            value = getattr(convention, facet)(span)
        except Exception as exc:  # a normalizer bug must never take a trace down, nor go unseen
            NORMALIZER_ERRORS.record(convention.name, facet, exc)
            continue
        if value is not None:
            return value
    return None


__all__ = [
    "CONVENTIONS",
    "NORMALIZER_ERRORS",
    "Convention",
    "Retrieval",
    "SpanKind",
    "TokenUsage",
    "ToolInvocation",
    "detect",
    "first",
    "normalizer_errors",
]
