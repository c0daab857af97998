"""Session ids from each convention: recorded traces where the corpus has one, else hand-built spans that carry
the attribute where its library documents it (cited per test)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.sessions import SESSION_ATTRIBUTES, session_of
from evaluators.sessions.ids import MAX_ID
from evaluators.traces import load_traces
from evaluators.traces.model import Trace
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of


def _corpus(name: str) -> list[Trace]:
    return load_traces([str(CORPUS / name)])


# --- recorded traces -----------------------------------------------------------------------------------------


def test_openinference_session_id_on_every_turn() -> None:
    """OpenInference `using_session` (oi_openai__session_support): `session.id` on every span."""
    refs = {session_of(t) for t in _corpus("oi_openai__session_support")}
    assert refs == {("c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95", "session.id")}


def test_otel_genai_conversation_id_tells_interleaved_conversations_apart() -> None:
    """OTel GenAI `gen_ai.conversation.id` (on invoke_agent and generate_content, not on execute_tool)."""
    by_trace = {t.trace_id: session_of(t) for t in _corpus("otel_genai__session_interleaved")}
    assert by_trace == {
        "e0321351a2947eb578d9c1d7f36944ef": ("conv_trip_7Hq2Lx9d", "gen_ai.conversation.id"),
        "5c192897c965467218d14d29d19c6440": ("conv_hr_3Fz8Rk1p", "gen_ai.conversation.id"),
        "c5723ccf5269af6b6ace9b66427c1c00": ("conv_trip_7Hq2Lx9d", "gen_ai.conversation.id"),
        "fde37c741e68b8e0f80dcda1d98e3137": ("conv_hr_3Fz8Rk1p", "gen_ai.conversation.id"),
    }


@pytest.mark.parametrize(
    ("scenario", "session_id"),
    [
        ("adk_native__tool_agent", "5eb91150-71fc-4774-ade8-cbb370f344a0"),  # ADK 2.x: the ADK session id
        ("adk1_native__tool_agent", "5bdce8e8-eecf-4704-97af-34b74936cacb"),  # ADK 1.x generate_content spans
        ("pydantic_ai__tool_agent", "01a20795-384c-72f4-bcd3-44b44d226c2a"),  # Pydantic AI: on every span
    ],
)
def test_libraries_writing_gen_ai_conversation_id(scenario: str, session_id: str) -> None:
    [trace] = _corpus(scenario)
    assert session_of(trace) == (session_id, "gen_ai.conversation.id")


def test_adk1_call_llm_session_id_alone() -> None:
    """ADK 1.x `call_llm` spans carry `gcp.vertex.agent.session_id` (the same id): read when it is the only one."""
    [trace] = _corpus("adk1_native__tool_agent")
    call_llm = [s.record for s in trace.spans if "gcp.vertex.agent.session_id" in s.record.attributes]
    assert call_llm, "the recorded ADK 1.x trace has call_llm spans with the session id"
    attributes = {"gcp.vertex.agent.session_id": call_llm[0].attributes["gcp.vertex.agent.session_id"]}
    ref = session_of(trace_of(make_span("call_llm", attributes)))
    assert ref == ("5bdce8e8-eecf-4704-97af-34b74936cacb", "gcp.vertex.agent.session_id")


def test_openinference_on_adk_prefers_session_id() -> None:
    """openinference-instrumentation-google-adk writes `session.id` (and ADK its `gen_ai.conversation.id`)."""
    [trace] = _corpus("oi_adk__tool_agent")
    assert session_of(trace) == ("93472578-e566-46df-8469-9013a24fb476", "session.id")


def test_one_session_per_trace_when_each_trace_names_its_own() -> None:
    """node_grpc__genai_manual: two traces, each `invoke_agent` with its own `gen_ai.conversation.id`."""
    ids = sorted(ref.session_id for t in _corpus("node_grpc__genai_manual") if (ref := session_of(t)))
    assert ids == ["conv-currency_agent-001", "conv-weather_agent-001"]


@pytest.mark.parametrize("scenario", ["oi_openai__tool_agent", "strands__tool_agent", "vercel_ai__tool_agent"])
def test_no_session_without_an_id(scenario: str) -> None:
    """Traces recorded without a session id (Strands and Vercel name none by default) belong to no session."""
    assert all(session_of(t) is None for t in _corpus(scenario))


def test_langchain_metadata_thread_id() -> None:
    """LangChain via OpenInference: the run's `metadata` JSON (recorded in oi_langchain__tool_agent) names the
    conversation with `session_id`, `conversation_id` or `thread_id` (LangGraph copies `configurable.thread_id`
    there); OpenInference copies it to `session.id`, older instrumentations leave it in `metadata` only."""
    [trace] = _corpus("oi_langchain__tool_agent")
    assert session_of(trace) is None  # recorded without a thread id
    records = []
    for span in trace.spans:
        record = span.record
        meta = record.attributes.get("metadata")
        if isinstance(meta, str):
            data = json.loads(meta)
            data["thread_id"] = "thread-7"
            record.attributes["metadata"] = json.dumps(data)
        records.append(record)
    ref = session_of(trace_of(*records))
    assert ref == ("thread-7", "metadata.thread_id")


@pytest.mark.parametrize("key", ["session_id", "conversation_id", "thread_id"])
def test_metadata_keys(key: str) -> None:
    span = make_span("agent", {"metadata": json.dumps({"ls_integration": "x", key: "c-1"})})
    assert session_of(trace_of(span)) == ("c-1", f"metadata.{key}")


def test_metadata_that_is_not_an_object_is_ignored() -> None:
    for value in ("[1, 2]", "{not json", "session_id=3", json.dumps({"session_id": ["a"]})):
        assert session_of(trace_of(make_span("agent", {"metadata": value}))) is None


# --- documented attributes, hand-built spans ----------------------------------------------------------------


@pytest.mark.parametrize(
    "attribute",
    [
        # Langfuse's OTel endpoint maps `langfuse.session.id` and `session.id` to the session
        # (https://langfuse.com/integrations/native/opentelemetry, attribute mapping; the Langfuse SDKs'
        # LangfuseOtelSpanAttributes.TRACE_SESSION_ID is "session.id").
        "langfuse.session.id",
        # OpenLLMetry: Traceloop.set_association_properties({...}) writes traceloop.association.properties.<key>
        # (https://traceloop.com/docs/openllmetry/tracing/association, whose example uses chat_id).
        "traceloop.association.properties.session_id",
        "traceloop.association.properties.conversation_id",
        "traceloop.association.properties.thread_id",
        "traceloop.association.properties.chat_id",
        # Vercel AI SDK: experimental_telemetry.metadata.<key> becomes ai.telemetry.metadata.<key>
        # (https://ai-sdk.dev/docs/ai-sdk-core/telemetry; Langfuse's Vercel guide passes `sessionId`).
        "ai.telemetry.metadata.sessionId",
        "ai.telemetry.metadata.session_id",
        "ai.telemetry.metadata.conversationId",
        "ai.telemetry.metadata.threadId",
        # Strands: Agent(trace_attributes={"session.id": ...}) puts it on the agent's spans
        # (https://strandsagents.com/latest/user-guide/observability-evaluation/traces, custom attributes).
        "session.id",
    ],
)
def test_documented_attribute(attribute: str) -> None:
    root = make_span("root", {attribute: "  conv-42 "})
    child = make_span("child", {}, parent=root)
    assert session_of(trace_of(root, child)) == ("conv-42", attribute)


def test_id_on_a_child_span_only() -> None:
    root = make_span("invoke_agent a", {})
    tool = make_span("execute_tool t", {}, parent=root)
    llm = make_span("chat m", {"gen_ai.conversation.id": "c-9"}, parent=root)
    assert session_of(trace_of(root, tool, llm)) == ("c-9", "gen_ai.conversation.id")


def test_order_of_conventions_and_configured_attributes() -> None:
    span = make_span(
        "root",
        {"gen_ai.conversation.id": "genai", "session.id": "oi", "app.chat": "mine"},
        resource={"deployment.chat": "res"},
    )
    trace = trace_of(span)
    assert session_of(trace) == ("oi", "session.id")
    assert session_of(trace, ["app.chat"]) == ("mine", "app.chat")
    assert session_of(trace, ["deployment.chat"]) == ("res", "deployment.chat")  # a resource attribute
    assert session_of(trace, ["absent"]) == ("oi", "session.id")


def test_values_that_name_no_session() -> None:
    for value in ("", "   ", True, 1.5, ["a"], b"x"):
        assert session_of(trace_of(make_span("r", {"session.id": value}))) is None
    assert session_of(trace_of(make_span("r", {"session.id": 1234}))) == ("1234", "session.id")
    long = session_of(trace_of(make_span("r", {"session.id": "x" * 10_000})))
    assert long is not None and len(long.session_id) == MAX_ID


# --- never raises, always bounded ----------------------------------------------------------------------------

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=600),
    st.binary(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.sampled_from(["session_id", "thread_id", "x"]), st.text(max_size=300), max_size=3).map(
        json.dumps
    ),
)
_names = st.sampled_from([*SESSION_ATTRIBUTES, "metadata", "app.session", "other"])


@settings(max_examples=200, deadline=None)
@given(
    spans=st.lists(st.dictionaries(_names, _values, max_size=4), min_size=1, max_size=4),
    resource=st.dictionaries(_names, _values, max_size=3),
)
def test_session_of_never_raises_and_bounds_the_id(spans: list[dict], resource: dict) -> None:
    root = make_span("root", spans[0], resource=resource)
    records = [root] + [make_span(f"s{i}", a, parent=root, resource=resource) for i, a in enumerate(spans[1:])]
    ref = session_of(trace_of(*records), ["app.session"])
    if ref is not None:
        assert 0 < len(ref.session_id) <= MAX_ID
        assert ref.session_id == ref.session_id.strip() or len(ref.session_id) == MAX_ID
        assert ref.source in (*SESSION_ATTRIBUTES, "app.session") or ref.source.startswith("metadata.")
