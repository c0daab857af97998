"""Which conversation a trace belongs to: the session id each convention writes, with where it came from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from evaluators.traces.model import Trace

__all__ = ["SESSION_ATTRIBUTES", "SessionRef", "session_of"]

# The span or resource attributes that name a conversation, in the order they are tried; the one found is the
# session's `source`. Every span of the trace is read, root first: some conventions put the id on every span
# (OpenInference), others only on some (OTel GenAI: not on tool spans).
SESSION_ATTRIBUTES: tuple[str, ...] = (
    "session.id",  # OpenInference (using_session), Langfuse's OTel attribute alias
    "gen_ai.conversation.id",  # OTel GenAI; ADK writes its session id here
    "langfuse.session.id",  # Langfuse SDK v3
    "traceloop.association.properties.session_id",  # OpenLLMetry association properties
    "traceloop.association.properties.conversation_id",
    "traceloop.association.properties.thread_id",
    "gcp.vertex.agent.session_id",  # ADK call_llm spans (1.x)
    "ai.telemetry.metadata.sessionId",  # Vercel AI SDK experimental_telemetry.metadata
    "ai.telemetry.metadata.session_id",
    "ai.telemetry.metadata.conversationId",
    "ai.telemetry.metadata.threadId",
)
MAX_ID = 256  # characters of a session id kept (longer ones are cut)


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
    then each convention's own attribute; None when no span names one."""
    spans = _root_first(trace)
    for name in (*extra_attributes, *SESSION_ATTRIBUTES):
        for attributes in _attribute_maps(spans):
            text = _text(attributes.get(name))
            if text is not None:
                return SessionRef(text, name)
    return None


def _root_first(trace: Trace) -> list:
    roots = list(trace.roots)
    return roots + [s for s in sorted(trace.spans, key=lambda s: s.start_time) if s not in roots]


def _attribute_maps(spans: Iterable) -> Iterable[dict]:
    seen_resources: set[int] = set()
    for span in spans:
        yield span.record.attributes
        resource = span.record.resource_attributes
        if id(resource) not in seen_resources:
            seen_resources.add(id(resource))
            yield resource
