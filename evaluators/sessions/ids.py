"""Which conversation a trace belongs to: the session id each convention writes, with where it came from."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from evaluators.traces.model import Trace

__all__ = ["METADATA_KEYS", "SESSION_ATTRIBUTES", "SessionRef", "session_of"]

# The span or resource attributes that name a conversation, in the order they are tried; the one found is the
# session's `source`. Every span of the trace is read, root first: some conventions put the id on every span
# (OpenInference), others only on some (OTel GenAI: not on tool spans). Where each is documented or recorded: the
# tests in tests/evaluators/sessions/test_session_ids.py.
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


class _Names(NamedTuple):
    """The attribute names tried, each with its priority (0 first), and those names with `metadata`: what one
    pass over an attribute map looks for."""

    rank: dict[str, int]
    wanted: frozenset[str]


@functools.lru_cache(maxsize=64)  # one entry per `sessions.attribute` setting in practice
def _names(extra_attributes: tuple[str, ...]) -> _Names:
    rank: dict[str, int] = {}
    for name in (*extra_attributes, *SESSION_ATTRIBUTES):
        rank.setdefault(name, len(rank))
    return _Names(rank, frozenset((*rank, METADATA_ATTRIBUTE)))


def session_of(trace: Trace, extra_attributes: Sequence[str] = ()) -> SessionRef | None:
    """The session `trace` belongs to: the configured `extra_attributes` first (span, then resource attributes),
    then each convention's own attribute, then OpenInference `metadata` keys; None when no span names one.

    The first name in that order that any attribute map holds (as text or an integer) wins, from the first map
    (root spans first, each span's resource after it) that holds it. This runs for every trace, so each map is
    read once: the names it holds are found in one pass (a set intersection), the best so far kept."""
    rank, wanted = _names(extra_attributes if type(extra_attributes) is tuple else tuple(extra_attributes))
    best: SessionRef | None = None
    best_rank = len(rank)
    metadata: list[object] = []
    for attributes in _attribute_maps(trace):
        if wanted.isdisjoint(attributes):
            continue
        held = wanted.intersection(attributes)
        for name in held:
            order = rank.get(name)
            if order is not None and order < best_rank:
                text = _text(attributes[name])
                if text is not None:
                    best, best_rank = SessionRef(text, name), order
        if best_rank == 0:
            return best  # nothing ranks higher, and an earlier map already lost
        if best is None and METADATA_ATTRIBUTE in held:
            metadata.append(attributes[METADATA_ATTRIBUTE])
    if best is not None:
        return best
    for value in metadata:
        ref = _from_metadata(value)
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


def _attribute_maps(trace: Trace) -> Iterator[dict]:
    """Each span's attributes, then its resource's the first time that resource is met: the root spans first,
    then the others as the trace holds them (no sort, no list: this runs for every trace and mostly stops at the
    root)."""
    roots = trace.roots
    seen_resources: set[int] = set()
    for span in roots:
        yield span.record.attributes
        resource = span.record.resource_attributes
        if id(resource) not in seen_resources:
            seen_resources.add(id(resource))
            yield resource
    root_ids = {id(r) for r in roots}
    for span in trace.spans:
        if id(span) in root_ids:
            continue
        yield span.record.attributes
        resource = span.record.resource_attributes
        if id(resource) not in seen_resources:
            seen_resources.add(id(resource))
            yield resource
