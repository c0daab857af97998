"""step_tree(trace): the tree of steps `inspect` prints and the review stores (`trace_detail`), from the views only.

Kept apart from `trace_detail` (which prices the calls and bounds the text for the store) so that `inspect` loads
neither the price table nor the config models."""

from __future__ import annotations

from collections.abc import Iterator

from evaluators.traces.model import Trace
from evaluators.traces.spans import LLMSpan, Span


def step_tree(trace: Trace) -> Iterator[tuple[Span, int, bool]]:
    """(span, depth, wraps the call below it) for every span, depth-first in start order, as `inspect` shows it.

    A span whose parent is not in the trace is at depth 0. A wrapper is the outer span of an LLM call that
    the framework wrote twice (its call is the span below it)."""
    wrappers = {s.wrapper.span_id for s in trace.spans if isinstance(s, LLMSpan) and s.wrapper is not None}
    depth: dict[str, int] = {}
    for span in trace.spans:
        parent = span.parent_span_id
        level = depth[parent] + 1 if parent in depth else 0
        depth[span.span_id] = level
        yield span, level, span.span_id in wrappers
