"""Strands convention (to be filled)."""

from __future__ import annotations

from ..records import SpanRecord
from .base import Convention


class Strands(Convention):
    name = "strands"

    def detect(self, span: SpanRecord) -> bool:
        return False
