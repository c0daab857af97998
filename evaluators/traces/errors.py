"""The one error type decoders raise, naming what was wrong and where."""

from __future__ import annotations


class TraceDecodeError(ValueError):
    """Input that is not valid OTLP (protobuf, OTLP-JSON or collector JSON lines).

    `where` says where in the input (a file name, a line, a JSON path); `reason` what was wrong.
    """

    def __init__(self, reason: str, where: str = "") -> None:
        self.reason = reason
        self.where = where
        super().__init__(f"{where}: {reason}" if where else reason)


class InvalidIdError(TraceDecodeError):
    """A trace, span or parent id of the wrong size or encoding: the span is rejected, not the request."""
