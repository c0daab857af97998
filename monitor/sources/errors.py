"""SourceError: how a source says a request failed for good, and its kinds (the poll error metric's labels)."""

from __future__ import annotations

from typing import Literal

__all__ = ["BOUND_KINDS", "ErrorKind", "SourceError"]

ErrorKind = Literal[
    "auth", "client", "server", "timeout", "connection", "decode", "io", "checkpoint",
    "cursor_loop", "page_limit", "byte_limit",
]  # fmt: skip
BOUND_KINDS = frozenset({"cursor_loop", "page_limit", "byte_limit"})  # a RunGuard stopped the run (guard.py)


class SourceError(Exception):
    """A source's request failed for good (after its retries)."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
