"""Which conversation a trace belongs to: the session id each convention writes, with where it came from."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from evaluators.traces.model import Trace

__all__ = ["METADATA_KEYS", "SESSION_ATTRIBUTES", "SessionRef", "session_of"]

# The span or resource attributes that name a conversation, in the order they are tried; the one found is the
# session's `source`. Every span of the trace is read, root first: some conventions put the id on every span
# (OpenInference), others only on some (OTel GenAI: not on tool spans). Where each is documented or recorded: the
# tests in tests/sessions/test_session_ids.py.
SESSION_ATTRIBUTES: tuple[str, ...] = (
    "session.id",  # OpenInference (using_session), Langfuse SDK (TRACE_SESSION_ID), Strands trace_attributes
    "gen_ai.conversation.id",  # OTel GenAI; ADK 1.x/2.x and Pydantic AI write it on their spans
    "langfuse.session.id",  # Langfuse's own OTel attribute
    "traceloop.association.properties.session_id",  # OpenLLMetry Traceloop.set_association_properties
    "traceloop.association.properties.conversation_id",
    "traceloop.association.properties.thread_id",
    "traceloop.association.properties.chat_id",  # the key OpenLLMetry's docs use in their example
    "gcp.vertex.agent.session_id",  # ADK call_llm spans (1.x)
    "ai.telemetry.metadata.sessionId",  # Vercel AI SDK experimental_telemetry.metadata (Langfuse's key)
    "ai.telemetry.metadata.session_id",
    "ai.telemetry.metadata.conversationId",
    "ai.telemetry.metadata.threadId",
)
# OpenInference's `metadata` attribute (a JSON object; LangChain's run metadata) names the conversation with one
# of these keys when the instrumentation did not copy it to `session.id`; the source is then `metadata.<key>`.
METADATA_ATTRIBUTE = "metadata"
METADATA_KEYS: tuple[str, ...] = ("session_id", "conversation_id", "thread_id")
MAX_ID = 256  # characters of a session id kept (longer ones are cut)
MAX_METADATA = 65_536  # characters of a `metadata` JSON parsed at most (a larger one is not read)


class SessionRef(NamedTuple):
    """A trace's session id and the attribute it came from."""

    session_id: str
    source: str


def _text(value: object) -> str | None:
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    else:
        return None
    return text[:MAX_ID] or None


def session_of(trace: Trace, extra_attributes: Sequence[str] = ()) -> SessionRef | None:
    """The session `trace` belongs to: the configured `extra_attributes` first (span, then resource attributes),
    then each convention's own attribute, then OpenInference `metadata` keys; None when no span names one."""
    maps = list(_attribute_maps(_root_first(trace)))
    for name in (*extra_attributes, *SESSION_ATTRIBUTES):
        for attributes in maps:
            text = _text(attributes.get(name))
            if text is not None:
                return SessionRef(text, name)
    for attributes in maps:
        ref = _from_metadata(attributes.get(METADATA_ATTRIBUTE))
        if ref is not None:
            return ref
    return None


def _from_metadata(value: object) -> SessionRef | None:
    if isinstance(value, str):
        if len(value) > MAX_METADATA or not value.lstrip().startswith("{"):
            return None
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if not isinstance(value, dict):
        return None
    for key in METADATA_KEYS:
        text = _text(value.get(key))
        if text is not None:
            return SessionRef(text, f"{METADATA_ATTRIBUTE}.{key}")
    return None


def _root_first(trace: Trace) -> list:
    """The root spans, then the others as the trace holds them (no sort: this runs for every trace)."""
    roots = trace.roots
    if len(roots) == 1:
        root = roots[0]
        return [root, *(s for s in trace.spans if s is not root)]
    ids = {id(r) for r in roots}
    return [*roots, *(s for s in trace.spans if id(s) not in ids)]


def _attribute_maps(spans: Iterable) -> Iterable[dict]:
    seen_resources: set[int] = set()
    for span in spans:
        yield span.record.attributes
        resource = span.record.resource_attributes
        if id(resource) not in seen_resources:
            seen_resources.add(id(resource))
            yield resource
