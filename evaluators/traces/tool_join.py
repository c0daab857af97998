"""Join tool calls and results recorded on LLM calls to the tool spans that ran them.

Some libraries record a tool span with no content: ADK 2.x and the OTel GenAI instrumentations with content in log
events (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`), or any tool span whose library writes only
a name. The arguments are still on the LLM call that asked for the tool (its output's tool calls) and the result in
the next request's history (a `tool_call_response` part, a `role: tool` message with `tool_call_id`, a Vercel
`tool-result` part...): every convention parses those into `ToolCall` / `ToolMessage`, which this module reads.

Two ways, in order:
1. by call id: the span's `gen_ai.tool.call.id` (or its convention's id) equals a tool call's / result's id anywhere
   in the trace. Ids that stand for "unknown" (ADK's `<not specified>`) never join.
2. by position, when the id finds nothing (ADK gives the span its own `adk-<uuid>` but sends the model, and logs,
   the model's id or a `{name}_{index}` stand-in): the caller is the agent's last LLM call started before the
   tool; its k-th request of this tool name is the k-th such tool span after it; the result is the last result
   with that request's id (else name) in the agent's next LLM call.

A value on the span itself always wins (see `spans.ToolSpan`); this fills only what it lacks. `with_reported_error` adds
the error a failed tool's result reports to a bare marker such as ADK's `TOOL_ERROR`. Work is linear in the
messages read: each call's tool calls and results are indexed once, on the first tool span that needs them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .messages import AssistantMessage, Message, ToolCall, ToolMessage
from .records import SpanRecord


class CallView(Protocol):
    """What the join reads of an LLM call (`spans.LLMSpan`; a protocol, so this module needs no import of it)."""

    agent_name: str | None

    @property
    def span_id(self) -> str: ...
    @property
    def start_time(self) -> int: ...
    @property
    def messages(self) -> list[Message]: ...
    @property
    def tool_calls(self) -> list[ToolCall]: ...


class ToolView(Protocol):
    """What the join reads of a tool span (`spans.ToolSpan`)."""

    agent_name: str | None

    @property
    def span_id(self) -> str: ...
    @property
    def start_time(self) -> int: ...
    @property
    def end_time(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def call_id(self) -> str | None: ...


# call ids that stand for "no id": never joined on
UNJOINABLE_IDS = frozenset({"", "<not specified>", "none", "null", "undefined", "unknown"})


def joinable_id(value: Any) -> str | None:
    """The call id to join on, or None for a missing or placeholder id."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text if text and text.lower() not in UNJOINABLE_IDS else None


@dataclass(frozen=True)
class JoinedCall:
    """What the LLM calls say about one tool call: the request (arguments) and the result, None when not found."""

    request: ToolCall | None = None
    result: ToolMessage | None = None


@dataclass
class _CallIndex:
    """One LLM call's requested tool calls and the results its request carried (the last one per id / name)."""

    requested: list[ToolCall]
    requested_by_name: dict[str, list[ToolCall]]
    results_by_id: dict[str, ToolMessage]
    results_by_name: dict[str, ToolMessage]


def _requested(call: CallView) -> list[ToolCall]:
    return [c for c in call.tool_calls if isinstance(c, ToolCall)]


def _index_call(call: CallView) -> _CallIndex:
    by_id: dict[str, ToolMessage] = {}
    by_name: dict[str, ToolMessage] = {}
    for message in call.messages:
        if isinstance(message, ToolMessage):
            key = joinable_id(message.tool_call_id)
            if key is not None:
                by_id[key] = message  # the last one wins: the most recent in a resent history
            if message.name:
                by_name[message.name] = message
    requested = _requested(call)
    requested_by_name: dict[str, list[ToolCall]] = {}
    for request in requested:
        requested_by_name.setdefault(request.name, []).append(request)
    return _CallIndex(requested, requested_by_name, by_id, by_name)


class ToolCallJoin:
    """The join for one trace: built from its real LLM calls and tool spans, queried per tool span."""

    def __init__(self, calls: Sequence[CallView], tools: Sequence[ToolView]):
        self._calls = sorted(calls, key=lambda c: c.start_time)
        self._tools = sorted(tools, key=lambda t: t.start_time)
        self._indexes: dict[str, _CallIndex] = {}
        self._by_id: tuple[dict[str, ToolCall], dict[str, ToolMessage]] | None = None
        self._positions: dict[str, tuple[CallView, int]] | None = None
        self._agent_calls: dict[str | None, tuple[list[int], list[CallView]]] | None = None
        self._all_calls: tuple[list[int], list[CallView]] = ([], [])

    # --- per call ------------------------------------------------------------------------------
    def _index(self, call: CallView) -> _CallIndex:
        index = self._indexes.get(call.span_id)
        if index is None:
            index = self._indexes[call.span_id] = _index_call(call)
        return index

    # --- by id ---------------------------------------------------------------------------------
    def _ids(self) -> tuple[dict[str, ToolCall], dict[str, ToolMessage]]:
        """Every tool call (requested, or in a resent history) and result in the trace, by id; the first wins."""
        if self._by_id is None:
            requests: dict[str, ToolCall] = {}
            results: dict[str, ToolMessage] = {}
            for call in self._calls:
                for request in self._index(call).requested:
                    key = joinable_id(request.id)
                    if key is not None:
                        requests.setdefault(key, request)
                for message in call.messages:
                    if isinstance(message, AssistantMessage):
                        for request in message.tool_calls:
                            key = joinable_id(request.id)
                            if key is not None:
                                requests.setdefault(key, request)
                for key, message in self._index(call).results_by_id.items():
                    results.setdefault(key, message)
            self._by_id = (requests, results)
        return self._by_id

    # --- by position ---------------------------------------------------------------------------
    def _calls_of(self, agent: str | None) -> tuple[list[int], list[CallView]]:
        """(start times, calls) of the agent's LLM calls, else of those no agent is known for (never another
        agent's); every call for a tool of no known agent."""
        if self._agent_calls is None:
            groups: dict[str | None, list[CallView]] = {}
            for call in self._calls:
                groups.setdefault(call.agent_name, []).append(call)
            self._agent_calls = {name: ([c.start_time for c in calls], calls) for name, calls in groups.items()}
            self._all_calls = ([c.start_time for c in self._calls], self._calls)
        if agent is None:
            return self._all_calls
        return self._agent_calls.get(agent) or self._agent_calls.get(None) or ([], [])

    def _caller(self, tool: ToolView) -> CallView | None:
        """The agent's last LLM call started before the tool, when it asked for a tool of this name."""
        starts, calls = self._calls_of(tool.agent_name)
        at = bisect_right(starts, tool.start_time) - 1
        if at < 0:
            return None
        call = calls[at]
        return call if tool.name in self._index(call).requested_by_name else None

    def _position_map(self) -> dict[str, tuple[CallView, int]]:
        """Each tool span's caller and its rank among the caller's tool spans of the same name."""
        if self._positions is None:
            positions: dict[str, tuple[CallView, int]] = {}
            ranks: dict[tuple[str, str], int] = {}
            for tool in self._tools:
                caller = self._caller(tool)
                if caller is None:
                    continue
                key = (caller.span_id, tool.name)
                rank = ranks.get(key, 0)
                ranks[key] = rank + 1
                positions[tool.span_id] = (caller, rank)
            self._positions = positions
        return self._positions

    def _next_call(self, tool: ToolView, after: CallView) -> CallView | None:
        """The agent's first LLM call started after the tool ended (and after its caller)."""
        starts, calls = self._calls_of(tool.agent_name)
        at = bisect_left(starts, max(tool.end_time, after.start_time + 1))
        return calls[at] if at < len(calls) else None

    def _by_position(self, tool: ToolView) -> JoinedCall:
        place = self._position_map().get(tool.span_id)
        if place is None:
            return JoinedCall()
        caller, rank = place
        same_name = self._index(caller).requested_by_name.get(tool.name, [])
        if rank >= len(same_name):
            return JoinedCall()
        request = same_name[rank]
        following = self._next_call(tool, caller)
        result = None
        if following is not None:
            index = self._index(following)
            key = joinable_id(request.id)
            result = index.results_by_id.get(key) if key is not None else index.results_by_name.get(tool.name)
        return JoinedCall(request, result)

    # --- the query -----------------------------------------------------------------------------
    def lookup(self, tool: ToolView) -> JoinedCall:
        """The request and result of `tool` as the LLM calls recorded them (by id, then by position)."""
        key = joinable_id(tool.call_id)
        request = result = None
        if key is not None:
            requests, results = self._ids()
            request, result = requests.get(key), results.get(key)
        if request is None or result is None:
            placed = self._by_position(tool)
            same = request is None or placed.request is None or joinable_id(placed.request.id) == key
            if same:  # never the id's request with another call's result
                request = request or placed.request
                result = result or placed.result
        return JoinedCall(request, result)


def with_reported_error(marker: str | None, record: SpanRecord, result: Any) -> str | None:
    """A failed tool span's error: `marker` (its status message or error.type), followed by the error its result
    reports (`{"error": "RuntimeError: ..."}`, or `{"error": {"message": ...}}`) when no exception event says more."""
    if marker is None or any(e.name == "exception" for e in record.events):
        return marker
    reported = result.get("error") if isinstance(result, dict) else None
    if isinstance(reported, dict):
        reported = reported.get("message")
    if not isinstance(reported, str) or not reported.strip() or reported.strip() in marker:
        return marker
    return f"{marker}: {reported.strip()}"


__all__ = ["UNJOINABLE_IDS", "CallView", "JoinedCall", "ToolCallJoin", "ToolView", "joinable_id", "with_reported_error"]
