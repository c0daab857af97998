"""Label values taken from traces: sanitized, and capped per label name with overflow into `__other__`."""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable

OTHER = "__other__"
UNKNOWN = "unknown"
MAX_LABEL_VALUE_CHARS = 128


def clean_label_text(value: object, max_chars: int = MAX_LABEL_VALUE_CHARS) -> str:
    """Drop control characters, trim surrounding whitespace, truncate; None becomes the empty string."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if not text.isprintable():
        text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs"))
    return text.strip()[:max_chars]


def sanitize_label_value(value: object, max_chars: int = MAX_LABEL_VALUE_CHARS) -> str:
    """`clean_label_text`, with an empty result (or None) becoming "unknown"."""
    return clean_label_text(value, max_chars) or UNKNOWN


class LabelCapper:
    """Admits at most `cap` distinct values per label name; later new values fold into `__other__`.

    `on_overflow(label)` is called once per folded value (each occurrence, not each distinct value, so memory
    stays bounded). Thread-safe.
    """

    def __init__(self, cap: int, on_overflow: Callable[[str], None] | None = None) -> None:
        if cap < 1:
            raise ValueError(f"label_value_cap must be at least 1, got {cap}")
        self.cap = cap
        self._on_overflow = on_overflow
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def __call__(self, label: str, value: object) -> str:
        """The exported value for `value` under `label`: sanitized, then capped."""
        clean = sanitize_label_value(value)
        with self._lock:
            seen = self._seen.setdefault(label, set())
            if clean in seen:
                return clean
            if len(seen) < self.cap:
                seen.add(clean)
                return clean
        if self._on_overflow is not None:
            self._on_overflow(label)
        return OTHER

    def distinct(self, label: str) -> int:
        """How many distinct values `label` has admitted."""
        with self._lock:
            return len(self._seen.get(label, ()))
