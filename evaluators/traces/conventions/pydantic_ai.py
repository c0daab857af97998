"""PydanticAI convention (to be filled)."""

from __future__ import annotations

from ..records import SpanRecord
from .base import Convention


class PydanticAI(Convention):
    name = "pydantic_ai"

    def detect(self, span: SpanRecord) -> bool:
        return False
