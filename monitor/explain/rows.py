"""The traces one explanation reads, as columns: every row's dimension codes flattened into one array."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class DimensionRows:
    """`n` traces: trace i's codes are `codes[offsets[i]:offsets[i + 1]]` (uint64, codes.code_of), its packed
    text `texts[i]` (codes.unpacked_text: read only to name a reported code)."""

    codes: np.ndarray  # uint64
    offsets: np.ndarray  # int64, n + 1 entries, offsets[0] == 0
    texts: Sequence[str | None]

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    def row_of_codes(self) -> np.ndarray:
        """The row each entry of `codes` belongs to (int64, as long as `codes`)."""
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.offsets))

    @classmethod
    def of(cls, blobs: Sequence[bytes | None], texts: Sequence[str | None]) -> DimensionRows:
        """The rows of stored `trace_signals.dimensions` blobs (8 bytes a code; None: no dimensions)."""
        lengths = np.fromiter((len(b) // 8 if b else 0 for b in blobs), dtype=np.int64, count=len(blobs))
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = b"".join(b[: len(b) // 8 * 8] for b in blobs if b)
        return cls(np.frombuffer(data, dtype="<u8"), offsets, texts)


__all__ = ["DimensionRows"]
