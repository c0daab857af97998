"""Build Trace views from span records: tree, classification, agent attribution. O(n log n)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from . import conventions as conv
from .conventions.base import SpanKind
from .model import Trace
from .records import SpanRecord
from .spans import VIEW_CLASSES, AgentSpan, LLMSpan, Span, ToolSpan
from .tool_join import ToolCallJoin


def _start(record: SpanRecord) -> int:
    return record.start_time_unix_nano


def _order(records: list[SpanRecord]) -> tuple[list[tuple[SpanRecord, int]], list[SpanRecord]]:
    """Depth-first order (siblings by start time) with each span's parent index; roots listed.

    A span whose parent never arrived is a root. Spans caught in a parent cycle are cut loose
    at their earliest member, which becomes a root, so every span is visited exactly once.
    """
    by_id = {r.span_id: r for r in records}
    children: dict[str, list[SpanRecord]] = defaultdict(list)
    roots: list[SpanRecord] = []
    for record in records:
        parent = record.parent_span_id
        if parent and parent != record.span_id and parent in by_id:
            children[parent].append(record)
        else:
            roots.append(record)
    for siblings in children.values():
        if len(siblings) > 1:
            siblings.sort(key=_start)
    roots.sort(key=_start)
    order: list[tuple[SpanRecord, int]] = []
    visited: set[str] = set()

    def walk(root: SpanRecord) -> None:
        stack: list[tuple[SpanRecord, int]] = [(root, -1)]
        while stack:
            record, parent_index = stack.pop()
            if record.span_id in visited:
                continue
            visited.add(record.span_id)
            index = len(order)
            order.append((record, parent_index))
            for child in reversed(children.get(record.span_id, ())):
                if child.span_id not in visited:
                    stack.append((child, index))

    for root in roots:
        walk(root)
    if len(visited) < len(records):
        for record in sorted((r for r in records if r.span_id not in visited), key=_start):
            if record.span_id not in visited:
                roots.append(record)
                walk(record)
    return order, roots


def _dedupe(records: Iterable[SpanRecord]) -> list[SpanRecord]:
    seen: dict[str, SpanRecord] = {}
    for record in records:
        seen.setdefault(record.span_id, record)
    return list(seen.values())


def _mark_enclosing_calls(order: list[tuple[SpanRecord, int]], views: list[Span], wrappers: set[str]) -> None:
    """Flag LLM calls with another real call somewhere beneath them (ADK 1.x: a sub-agent run inside)."""
    call_below = [False] * len(views)
    for index in range(len(order) - 1, -1, -1):
        view = views[index]
        is_call = isinstance(view, LLMSpan) and view.span_id not in wrappers
        if isinstance(view, LLMSpan) and call_below[index]:
            view.encloses_calls = True
        parent_index = order[index][1]
        if parent_index >= 0 and (is_call or call_below[index]):
            call_below[parent_index] = True


def _attach_tool_join(views: list[Span], wrappers: set[str]) -> None:
    """Give every tool span the trace's (lazy) join to the LLM calls that requested it and got its result."""
    tools = [v for v in views if isinstance(v, ToolSpan)]
    if not tools:
        return
    calls = [v for v in views if isinstance(v, LLMSpan) and v.span_id not in wrappers]
    join = ToolCallJoin(calls, tools)
    for tool in tools:
        tool.join = join


def build_trace(records: Iterable[SpanRecord], trace_id: str | None = None) -> Trace:
    """One Trace from the spans of one trace (duplicates by span id keep the first)."""
    unique = _dedupe(records)
    order, root_records = _order(unique)
    views: list[Span] = []
    agent_of: list[str | None] = []  # the agent context each span establishes for its children
    wrappers: set[str] = set()
    for record, parent_index in order:
        conventions = conv.detect(record)
        kind = conv.first("span_kind", record, conventions) or SpanKind.OTHER
        inherited = agent_of[parent_index] if parent_index >= 0 else None
        view_class = VIEW_CLASSES.get(kind, Span)
        view: Span
        if view_class is AgentSpan:
            view = AgentSpan(record, conventions, None)
            view.agent_name = view.name
        else:
            own = record.attributes.get("gen_ai.agent.name")
            agent = inherited or (own if isinstance(own, str) and own else None)
            view = view_class(record, conventions, agent)
        parent = views[parent_index] if parent_index >= 0 else None
        if isinstance(view, LLMSpan) and isinstance(parent, LLMSpan):
            # A direct LLM -> LLM pair is one model call (ADK 1.x call_llm -> generate_content): the outer
            # span wraps it. Only the direct parent: a sub-agent nested in a model call is no wrapper.
            wrappers.add(parent.span_id)
            view.wrapper = parent
        views.append(view)
        agent_of.append(view.agent_name)
    _mark_enclosing_calls(order, views, wrappers)
    _attach_tool_join(views, wrappers)
    position = {view.span_id: i for i, view in enumerate(views)}
    roots = [views[position[r.span_id]] for r in root_records]
    tid = trace_id or (unique[0].trace_id if unique else "")
    return Trace(tid, views, roots, wrappers)


def group_by_trace(records: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    """Spans grouped by trace id, in first-seen order of the traces."""
    groups: dict[str, list[SpanRecord]] = {}
    for record in records:
        groups.setdefault(record.trace_id, []).append(record)
    return groups
