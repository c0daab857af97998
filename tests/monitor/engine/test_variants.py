"""Each trace's variant (variants.attribute) and pair keys, and how they reach its TraceOutcome."""

from __future__ import annotations

import json

import pytest

from evaluators.sdk import builtin
from monitor.config.variants import VariantsConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.engine.variants import normalised_input, pair_key, pair_keys, variant_of
from monitor.metrics.tally import MetricsTally
from tests.support.spanfactory import make_span, trace_of


def user_says(text: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])


CHAT = {"gen_ai.operation.name": "chat", "gen_ai.system": "gemini"}


def agent_trace(root_attributes=None, resource=None, models=("gemini-2.5-flash",), question="What is  the Weather?"):
    root = make_span(
        "invoke_agent weather",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
         "gen_ai.input.messages": user_says(question), **(root_attributes or {})},
        resource=resource or {"service.name": "agent"},
    )  # fmt: skip
    calls = [
        make_span(f"chat {m}", {**CHAT, "gen_ai.request.model": m}, parent=root, resource=resource) for m in models
    ]
    return trace_of(root, *calls)


def test_the_variant_comes_from_a_root_span_attribute_before_the_resource() -> None:
    trace = agent_trace({"feature.flag": "new-prompt"}, {"service.name": "agent", "service.version": "1.5"})
    assert variant_of(trace, "service.version") == "1.5"
    assert variant_of(trace, "feature.flag") == "new-prompt"
    both = agent_trace({"service.version": "root"}, {"service.name": "agent", "service.version": "1.5"})
    assert variant_of(both, "service.version") == "root"


def test_missing_attribute_or_setting_gives_the_empty_variant() -> None:
    trace = agent_trace()
    assert variant_of(trace, "service.version") == ""
    assert variant_of(trace, "") == ""


def test_first_llm_model_is_the_model_of_the_first_call() -> None:
    assert variant_of(agent_trace(models=("gemini-2.5-pro", "gemini-2.5-flash")), "first_llm_model") == "gemini-2.5-pro"
    assert variant_of(agent_trace(models=()), "first_llm_model") == ""


def test_boolean_attributes_read_as_lowercase_words() -> None:
    assert variant_of(agent_trace({"flag.new_prompt": True}), "flag.new_prompt") == "true"


def test_inputs_pair_regardless_of_case_and_whitespace() -> None:
    assert normalised_input("  What is\n the WEATHER? ") == "what is the weather?"
    assert normalised_input("   ") is None
    a = pair_key(agent_trace(question="What is the weather?"), "input")
    b = pair_key(agent_trace(question="what  is the weather?\n"), "input")
    c = pair_key(agent_trace(question="What is the time?"), "input")
    assert a == b != c and a is not None


def test_a_task_id_attribute_pairs_on_its_value_and_no_value_no_key() -> None:
    assert pair_key(agent_trace({"task.id": "t-7"}), "task.id") == "task.id:t-7"
    assert pair_key(agent_trace(), "task.id") is None


def test_pair_keys_only_for_variants_of_a_pairwise_entry() -> None:
    config = VariantsConfig.model_validate(
        {
            "attribute": "service.version",
            "pairwise": [
                {"baseline": "1.4", "candidate": "1.5"},
                {"baseline": "1.4", "candidate": "1.6", "pair_by": "task.id", "evaluator": "pairwise_task"},
            ],
        }
    )
    trace = agent_trace({"task.id": "t-1"})
    assert dict(pair_keys(trace, "1.4", config)).keys() == {"input", "task.id"}
    assert dict(pair_keys(trace, "1.5", config)).keys() == {"input"}
    assert pair_keys(trace, "1.7", config) == ()
    assert pair_keys(trace, "", config) == ()


@pytest.mark.parametrize("workers_variant", ["1.5", ""])
def test_the_outcome_rows_and_tally_carry_the_variant(workers_variant: str) -> None:
    config = VariantsConfig(attribute="service.version" if workers_variant else "")
    evaluator = TraceEvaluator([ConfiguredEvaluator(builtin("error_free"), "error_free")], variants=config)
    resource = {"service.name": "agent", "service.version": "1.5"}
    outcome = evaluator.outcome(agent_trace(resource=resource))
    assert outcome.variant == workers_variant
    tally = MetricsTally()
    tally.add_results(outcome.service, outcome.trace_id, outcome.results, outcome.variant)
    assert {key[4] for key in tally.results} == {workers_variant}
