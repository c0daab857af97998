"""Plain-text formatting for the review pages: UTC times, durations, scores, ratios, clipped excerpts."""

from __future__ import annotations

import math
import time

ELLIPSIS = "…"


def utc(seconds: float | None) -> str:
    """`2025-01-02 03:04:05` (UTC), or "" for None."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


def duration_ms(ms: float | None) -> str:
    """`850 ms`, `1.2 s`, `2m 03s`, `1h 05m`."""
    if ms is None or not math.isfinite(ms):
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def score(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.2f}"


def ratio(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value * 100:.1f}%"


def usd(value: float | None) -> str:
    """`$12.34`, `$0.0123`, `$0.000123` (more decimals for smaller sums); "" for None (unpriced)."""
    if value is None or not math.isfinite(value):
        return ""
    if value >= 100:
        return f"${value:,.2f}"
    if value >= 0.01 or value == 0:
        return f"${value:.4f}"
    return f"${value:.6f}" if value >= 1e-6 else "<$0.000001"


SOURCES = {"span": "reported by the span", "price_table": "genai-prices table", "override": "pricing override"}


def clip(text: str | None, limit: int) -> str:
    """`text` cut to `limit` characters (an ellipsis marks the cut), whitespace runs folded; "" for None."""
    if not text:
        return ""
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: max(limit - 1, 0)] + ELLIPSIS


def short_id(trace_id: str, keep: int = 12) -> str:
    return trace_id if len(trace_id) <= keep else trace_id[:keep] + ELLIPSIS


def clip_words(text: str | None, limit: int) -> str:
    """`clip`, but cut at the last space (or `,;` in JSON-like text) before `limit` when there is one in its last
    third, so no word, number or quoted value is cut in the middle; an ellipsis marks the cut."""
    if not text:
        return ""
    folded = " ".join(text.split())
    if len(folded) <= limit:
        return folded
    head = folded[: max(limit - 1, 0)]
    cut = max(head.rfind(" "), head.rfind(","), head.rfind(";"))
    if cut >= limit * 2 // 3:
        head = head[: cut + 1] if head[cut] in ",;" else head[:cut]
    return head.rstrip() + ELLIPSIS
