"""The dimensions kept per trace (monitor/explain/dimensions.py): what each convention gives, the buckets, the
configured attributes, and the bounds on any input."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators.traces import Trace, build_trace, load_traces, read_paths
from monitor.config.explain import MAX_EXTRA_DIMENSIONS, ExplainConfig
from monitor.explain.dimensions import (
    MAX_VALUES,
    DimensionSettings,
    dimensions_of,
    language_of,
    length_bucket,
    template_id,
    turn_bucket,
)
from monitor.store.dimension_codes import MAX_PAIRS, MAX_VALUE_CHARS, clean_value
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of

SETTINGS = DimensionSettings()
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini"}


def corpus(scenario: str) -> list[Trace]:
    """The scenario's traces (tests/fixtures/corpus), by start time."""
    return sorted(load_traces([CORPUS / scenario]), key=lambda t: t.start_time)


def values(trace: Trace, dimension: str, settings: DimensionSettings = SETTINGS) -> list[str]:
    return [v for d, v in dimensions_of(trace, settings) if d == dimension]


def one(trace: Trace, dimension: str, settings: DimensionSettings = SETTINGS) -> str | None:
    found = values(trace, dimension, settings)
    assert len(found) <= 1, found
    return found[0] if found else None


def says(*texts: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": t}]} for t in texts])


def agent(question: str = "What is the weather in Paris tomorrow?", resource=None, **attributes) -> Trace:
    """An agent asked `question` that makes one LLM call (which sends the question), its root span carrying
    `attributes`."""
    asked = {"gen_ai.input.messages": says(question)}
    root = make_span(
        "invoke_agent helper",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", **asked, **attributes},
        resource={"service.name": "shop", **(resource or {})},
    )
    call = make_span("chat gpt-4o-mini", {**CHAT, **asked}, parent=root, resource=root.resource_attributes)
    return trace_of(root, call)


# --- the corpus ------------------------------------------------------------------------------------------------
SCENARIOS = ["oi_openai_agents__weather_handoff", "adk_native__tool_agent", "tl_openai__tool_agent",
             "otel_genai__tool_agent", "vercel_ai__tool_agent", "strands__tool_agent",
             "adk_native__tool_error"]  # fmt: skip


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_corpus_traces_give_their_agents_and_tools(scenario: str) -> None:
    expected = {t["trace_id"]: t for t in json.loads((CORPUS / scenario / "expected.json").read_text())["traces"]}
    for trace in corpus(scenario):
        want = expected[trace.trace_id]
        assert values(trace, "tool") == list(dict.fromkeys(want["tool_calls"]))
        assert sorted(values(trace, "agent")) == want["agents"]
        assert one(trace, "service") == trace.service_name


@pytest.mark.parametrize(
    ("scenario", "model", "provider"),
    [
        ("oi_openai_agents__weather_handoff", "gpt-4.1-2025-04-14", "openai"),
        ("adk_native__tool_agent", "gemini-2.0-flash", "gcp.gemini"),  # ADK 2.x guesses the provider from the model
        ("oi_adk__tool_agent", "gemini-2.0-flash", "google"),  # OpenInference llm.provider
        ("tl_anthropic__tool_use", "claude-sonnet-4-5", "anthropic"),
        ("vercel_ai__tool_agent", "gpt-4o-mini", "openai"),  # ai.model.provider openai.chat, normalised
    ],
)
def test_corpus_traces_give_their_model_and_provider(scenario: str, model: str, provider: str) -> None:
    for trace in corpus(scenario):
        assert values(trace, "model") == [model]
        assert values(trace, "provider") == [provider]


def test_strands_names_no_provider() -> None:
    """Strands writes its framework's name as the provider: the views drop it, and so do the dimensions."""
    (trace,) = corpus("strands__tool_agent")
    assert values(trace, "provider") == [] and values(trace, "model") == ["gpt-4o-mini"]


def test_a_failed_tool_is_a_value_of_tool_failed() -> None:
    (trace,) = corpus("adk_native__tool_error")
    assert values(trace, "tool") == ["convert_currency"] and values(trace, "tool.failed") == ["convert_currency"]
    (fine,) = corpus("adk_native__tool_agent")
    assert values(fine, "tool.failed") == []


def test_the_resource_gives_service_version_and_environment() -> None:
    batch = read_paths([CORPUS / "oi_openai__tool_agent"])
    resource = {**batch.spans[0].resource_attributes, "service.version": "2.4.1"}
    (trace,) = [build_trace([dataclasses.replace(s, resource_attributes=resource) for s in batch.spans])]
    assert one(trace, "service.version") == "2.4.1" and one(trace, "service") == "oi_openai"
    (openlit,) = corpus("openlit__openai_tool_agent")
    assert one(openlit, "deployment.environment") == "corpus" and one(openlit, "service.version") is None


def test_kubernetes_cloud_and_host_come_from_the_resource() -> None:
    resource = {"k8s.namespace.name": "agents", "k8s.deployment.name": "helper", "k8s.pod.name": "helper-7d9f-x2x",
                "cloud.region": "eu-west-1", "cloud.availability_zone": "eu-west-1b", "host.name": "node-3",
                "deployment.environment.name": "prod"}  # fmt: skip
    dims = dict(dimensions_of(agent(resource=resource), SETTINGS))
    assert {k: dims[k] for k in resource if k != "deployment.environment.name"} == {
        k: v for k, v in resource.items() if k != "deployment.environment.name"
    }
    assert dims["deployment.environment"] == "prod"  # the semconv 1.27 name, under the dimension's name


def test_the_newer_environment_name_wins() -> None:
    trace = agent(resource={"deployment.environment": "old", "deployment.environment.name": "new"})
    assert one(trace, "deployment.environment") == "new"


# --- who, which conversation, which turn -------------------------------------------------------------------------
def test_openinference_user_and_session_and_the_turns() -> None:
    traces = corpus("oi_openai__session_support")
    assert [one(t, "user.id") for t in traces] == ["user-42"] * 3
    assert [one(t, "session.id") for t in traces] == ["c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95"] * 3
    assert [one(t, "turn") for t in traces] == ["1", "2", "3"]


@pytest.mark.parametrize("scenario", ["adk_native__events_multi_turn", "pydantic_ai__session_chat",
                                      "otel_openai_v2__multi_turn", "oi_langchain__multi_turn"])  # fmt: skip
def test_the_turn_is_the_user_messages_the_first_request_resends(scenario: str) -> None:
    assert [one(t, "turn") for t in corpus(scenario)] == ["1", "2", "3"]


@pytest.mark.parametrize(
    "attribute",
    ["user.id", "enduser.id", "langfuse.user.id", "traceloop.association.properties.user_id",
     "ai.telemetry.metadata.userId"],
)  # fmt: skip
def test_each_convention_names_the_user(attribute: str) -> None:
    assert one(agent(**{attribute: "u-7"}), "user.id") == "u-7"


def test_a_user_and_a_tenant_on_the_resource_count_too() -> None:
    trace = agent(resource={"enduser.id": "u-1", "tenant.id": "acme"})
    assert one(trace, "user.id") == "u-1" and one(trace, "tenant.id") == "acme"


@pytest.mark.parametrize("attribute", ["tenant.id", "tenant_id", "traceloop.association.properties.tenant_id"])
def test_the_tenant(attribute: str) -> None:
    assert one(agent(**{attribute: "acme"}), "tenant.id") == "acme"


def test_no_session_no_turn_and_a_configured_session_attribute() -> None:
    plain = agent()
    assert one(plain, "session.id") is None and one(plain, "turn") is None
    threaded = agent(**{"app.thread": "t-9"})
    assert one(threaded, "session.id") is None
    configured = DimensionSettings(session_attributes=("app.thread",))
    assert one(threaded, "session.id", configured) == "t-9" and one(threaded, "turn", configured) == "1"


def test_a_long_conversation_falls_in_a_wider_turn_bucket() -> None:
    root = make_span("invoke_agent helper", {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "c"})
    history = says(*(f"question number {n}" for n in range(7)))
    trace = trace_of(root, make_span("chat", {**CHAT, "gen_ai.input.messages": history}, parent=root))
    assert one(trace, "turn") == "6-10"


def test_turn_buckets() -> None:
    assert [turn_bucket(n) for n in range(1, 13)] == ["1", "2", "3", "4-5", "4-5", *["6-10"] * 5, ">10", ">10"]


# --- prompts -------------------------------------------------------------------------------------------------------
def test_openinference_llamaindex_records_its_template() -> None:
    query = [t for t in corpus("oi_llamaindex__query_engine") if t.get_llm_calls()]
    (trace,) = query
    template = next(s.attributes["llm.prompt_template.template"] for s in trace.spans
                    if "llm.prompt_template.template" in s.attributes)  # fmt: skip
    assert values(trace, "prompt.template") == [template_id(template)]
    assert template_id(template).startswith("Context information is below. ---") and " #" in template_id(template)


def test_template_ids_are_short_stable_and_tell_texts_apart() -> None:
    a = "You are a helpful assistant. " * 20 + "Answer about {city}."
    b = "You are a helpful assistant. " * 20 + "Answer about {country}."
    assert template_id(a) == template_id(a) != template_id(b)
    assert len(template_id(a)) <= 52 and template_id("Hi {name}").startswith("Hi {name} #")


def test_prompt_keys_names_and_versions_of_each_convention() -> None:
    oi = agent(**{"llm.prompt_template.template": "Weather in {city}?", "llm.prompt_template.version": "v3"})
    assert values(oi, "prompt.template") == [template_id("Weather in {city}?")] and values(oi, "prompt.version") == [
        "v3"
    ]
    tl = agent(**{"traceloop.prompt.key": "weather", "traceloop.prompt.version": 4,
                  "traceloop.prompt.template": "Weather in {{city}}?"})  # fmt: skip
    assert values(tl, "prompt.template") == ["weather"] and values(tl, "prompt.version") == ["4"]
    lf = agent(**{"langfuse.observation.prompt.name": "weather-v", "langfuse.observation.prompt.version": 2})
    assert values(lf, "prompt.template") == ["weather-v"] and values(lf, "prompt.version") == ["2"]
    assert values(agent(), "prompt.template") == [] and values(agent(), "prompt.version") == []


# --- the input, the hour, the configured attributes -------------------------------------------------------------
def test_the_input_language() -> None:
    assert one(agent("¿Qué tiempo hará mañana en Madrid? ¿Necesito un paraguas?"), "input.language") == "es"
    assert one(agent("What is the weather in Paris tomorrow, and do I need an umbrella?"), "input.language") == "en"
    assert one(agent("Hola"), "input.language") == "und"  # too short to tell
    assert one(agent("12345 67890 !!!"), "input.language") == "und"
    off = DimensionSettings(language=False)
    assert one(agent("What is the weather in Paris tomorrow?"), "input.language", off) is None


def test_language_of_reads_only_the_start_of_a_long_input() -> None:
    english = "The weather in Paris is lovely today, and tomorrow it will be sunny again. " * 4
    assert language_of(english + "¿Qué tiempo hará mañana en Madrid? Necesito un paraguas. " * 10_000) == "en"


def test_input_length_buckets() -> None:
    assert [length_bucket(n) for n in (0, 99, 100, 499, 500, 1999, 2000, 9999, 10_000, 10**7)] == [
        "<100", "<100", "100-499", "100-499", "500-1999", "500-1999", "2000-9999", "2000-9999", "≥10000", "≥10000"
    ]  # fmt: skip
    assert one(agent("w" * 750), "input.length") == "500-1999"
    no_input = trace_of(make_span("chat", CHAT))
    assert one(no_input, "input.length") is None and one(no_input, "input.language") is None


def test_the_hour_is_the_utc_hour_of_the_start() -> None:
    start = 1_700_000_000 * 10**9  # 2023-11-14T22:13:20Z
    trace = trace_of(make_span("invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, start=start))
    assert one(trace, "hour") == "22"
    assert one(trace_of(make_span("x", start=3 * 3600 * 10**9 + 5)), "hour") == "03"


def test_configured_attributes_resource_first_then_the_spans_root_first() -> None:
    root = make_span("root", {"feature.flag": "root-flag", "tier": "gold"}, resource={"region.code": "r1"})
    child = make_span("child", {"feature.flag": "child-flag", "only.child": 7, "listy": ["a", "b"]}, parent=root)
    trace = trace_of(root, child)
    extra = DimensionSettings(extra=("region.code", "feature.flag", "only.child", "listy", "absent", "service.version"))
    dims = dimensions_of(trace, extra)
    assert [p for p in dims if p[0] in extra.extra] == [("region.code", "r1"), ("feature.flag", "root-flag"),
                                                        ("only.child", "7")]  # fmt: skip


def test_settings_from_the_config() -> None:
    config = ExplainConfig.model_validate({"dimensions": ["tier", " plan "], "language": False})
    assert DimensionSettings.from_config(config, ["app.thread"]) == DimensionSettings(
        ("tier", "plan"), False, ("app.thread",)
    )


# --- bounds --------------------------------------------------------------------------------------------------------
def test_five_hundred_tools_keep_eight_values() -> None:
    root = make_span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    tools = [make_span(f"execute_tool t{n}", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{n}"},
                       parent=root, status=2 if n % 2 else 0) for n in range(500)]  # fmt: skip
    dims = dimensions_of(trace_of(root, *tools), SETTINGS)
    assert [v for d, v in dims if d == "tool"] == [f"t{n}" for n in range(MAX_VALUES)]
    assert [v for d, v in dims if d == "tool.failed"] == [f"t{n}" for n in range(1, 16, 2)]
    assert len(dims) <= MAX_PAIRS and len(set(dims)) == len(dims)


def test_everything_at_once_keeps_at_most_max_pairs() -> None:
    extra = tuple(f"x.{n}" for n in range(MAX_EXTRA_DIMENSIONS))
    spans = [make_span("root", {**{name: "v" * 10_000 for name in extra}, "user.id": "u" * 10**6},
                       resource={"service.name": "s" * 1000, "host.name": "h\x1f\x1e\nost"})]  # fmt: skip
    for n in range(40):
        call = {**CHAT, "gen_ai.request.model": f"m{n}", "gen_ai.provider.name": f"p{n}",
                "llm.prompt_template.template": f"T{n}", "llm.prompt_template.version": n}  # fmt: skip
        spans.append(make_span(f"chat m{n}", call, parent=spans[0]))
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{n}"}
        spans.append(make_span(f"execute_tool t{n}", tool, parent=spans[0], status=2))
    dims = dimensions_of(trace_of(*spans), DimensionSettings(extra=extra))
    assert len(dims) == MAX_PAIRS and len(set(dims)) == len(dims)
    assert all(0 < len(v) <= MAX_VALUE_CHARS and v == clean_value(v) for _, v in dims)
    assert dict(dims)["host.name"] == "h   ost"  # the packing's separators never survive in a value
    assert all(sum(1 for d, _ in dims if d == name) <= MAX_VALUES for name, _ in dims)


ATTRIBUTE_NAMES = st.sampled_from(
    ["user.id", "enduser.id", "tenant.id", "session.id", "gen_ai.conversation.id", "llm.prompt_template.template",
     "llm.prompt_template.version", "traceloop.prompt.key", "traceloop.prompt.template", "service.version",
     "deployment.environment", "host.name", "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.tool.name",
     "gen_ai.request.model", "gen_ai.provider.name", "gen_ai.input.messages", "input.value", "openinference.span.kind",
     "metadata", "x.extra"]
) | st.text(max_size=20)  # fmt: skip
KNOWN_VALUES = st.sampled_from(["chat", "invoke_agent", "execute_tool", "LLM", "TOOL", "AGENT", "{}", "[]", "\x00\x1f"])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300) | st.binary(max_size=20)
VALUES = st.recursive(
    SCALARS | KNOWN_VALUES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
ATTRIBUTES = st.dictionaries(ATTRIBUTE_NAMES, VALUES, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(ATTRIBUTES, ATTRIBUTES), min_size=1, max_size=6), st.integers(0, 2**63 - 1))
def test_any_attributes_give_bounded_clean_pairs_and_never_raise(spans: list, start: int) -> None:
    records = [make_span("root", spans[0][0], resource=spans[0][1], start=start)]
    records += [make_span(f"s{n}", a, parent=records[0], resource=r) for n, (a, r) in enumerate(spans[1:])]
    trace = trace_of(*records)
    dims = dimensions_of(trace, DimensionSettings(extra=("x.extra", "metadata")))
    assert len(dims) <= MAX_PAIRS and len(set(dims)) == len(dims)
    assert all(isinstance(d, str) and isinstance(v, str) and v and v == clean_value(v) for d, v in dims)
    assert all(sum(1 for d, _ in dims if d == name) <= MAX_VALUES for name, _ in dims)


def test_an_unreadable_trace_gives_what_it_can() -> None:
    class Broken(Trace):
        @property
        def service_name(self) -> str:
            raise RuntimeError("no")

    trace = agent()
    broken = Broken(trace.trace_id, trace.spans, trace.roots, set())
    dims = dict(dimensions_of(broken, SETTINGS))
    assert "service" not in dims and dims["agent"] == "helper" and dims["model"] == "gpt-4o-mini"


def test_the_unmasked_dimensions_are_built_in_names_and_no_id_or_prompt_is_among_them() -> None:
    from monitor.explain.dimensions import BUILT_IN
    from monitor.store.dimension_codes import UNMASKED

    assert UNMASKED <= BUILT_IN
    assert {"user.id", "session.id", "tenant.id", "prompt.template", "prompt.version"} == BUILT_IN - UNMASKED
