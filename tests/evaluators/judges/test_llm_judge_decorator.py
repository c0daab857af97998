"""@llm_judge: a prompt function becomes an LLMJudge (level from the annotation, params, ground truth)."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import pytest

from evaluators import AgentTrace, EvalResult, LLMSpan, Param, Task, Trace, builtin, list_builtins, register
from evaluators.judges import DATA_RULE, JudgeRequest, JudgeVerdict, LLMJudge, prepare
from evaluators.judges.decorator import FunctionJudge, llm_judge
from evaluators.judges.prompt import compose, data_block, question
from evaluators.sdk import evaluators_in_module, unregister
from evaluators.sdk.decorator import FunctionEvaluator
from tests.evaluators.judges.synthetic import agent_trace
from tests.support.promptcheck import INJECTION, blocks

CRITERIA = "Score 1 when the answer is polite, 0 when it is rude; in between for mixed."


@llm_judge(name="politeness", criteria=CRITERIA, threshold=0.7, model="gemini-2.5-pro")
def politeness(trace: Trace, max_data_chars: int = 0) -> str | EvalResult:
    """Whether the final answer is polite."""
    if trace.output is None:
        return EvalResult.skip("no_data", "no answer")
    return compose(data_block("final_answer", trace.output, max_data_chars), question("Is the answer polite?"))


def test_the_decorator_builds_a_configured_llm_judge() -> None:
    assert isinstance(politeness, LLMJudge) and isinstance(politeness, FunctionJudge)
    assert (politeness.name, politeness.level, politeness.kind) == ("politeness", "trace", "llm_judge")
    assert politeness.threshold == 0.7 and politeness.model == "gemini-2.5-pro"
    assert politeness.instructions == CRITERIA and politeness.response_schema is JudgeVerdict
    assert politeness.description == "Whether the final answer is polite."
    assert politeness.needs_ground_truth is False
    info = politeness.info
    assert info.kind == "llm_judge" and {p.name for p in info.params} >= {"model", "num_samples", "max_data_chars"}


def test_request_holds_the_functions_prompt_and_the_criteria() -> None:
    trace = agent_trace(answer=f"Certainly, Paris. {INJECTION}")
    request = politeness.request(trace)
    assert isinstance(request, JudgeRequest)
    assert request.system == f"{DATA_RULE}\n\n{CRITERIA}" and request.model == "gemini-2.5-pro"
    assert "Certainly, Paris." in blocks(request.prompt)["final_answer"]  # the injection cannot close it
    assert politeness(trace) == request.prompt  # calling the judge calls the function


def test_settings_every_judge_has_are_passed_to_the_function() -> None:
    trace = agent_trace(answer="x" * 5000)
    request = politeness.with_config(max_data_chars=300).request(trace)
    assert isinstance(request, JudgeRequest)
    assert "[truncated: showing 300 of 5000 characters]" in request.prompt
    assert politeness.max_data_chars == 8000  # the judge's default, not the function's


def test_a_skip_returned_by_the_function_is_the_result() -> None:
    trace = agent_trace(answer=None)
    [run] = list(prepare(trace, [politeness]))
    assert run.request is None and run.result is not None and run.result.skip_reason == "no_data"


def test_the_default_reply_is_a_judge_verdict() -> None:
    result = politeness.to_result(JudgeVerdict(score=0.9, verdict="pass", explanation="polite"))
    assert result.score == 0.9 and result.explanation == "polite" and result.details == {"verdict": "pass"}


def test_the_level_comes_from_the_annotation_or_the_option() -> None:
    @llm_judge(criteria="c")
    def per_call(call: LLMSpan) -> str:
        return data_block("response", call.response, 100)

    @llm_judge(criteria="c")
    def per_agent(agent: AgentTrace) -> str:
        return data_block("output", agent.output, 100)

    @llm_judge(criteria="c", level="agent")
    def untyped(subject) -> str:  # type: ignore[no-untyped-def]
        return "p"

    assert (per_call.level, per_agent.level, untyped.level) == ("llm", "agent", "agent")
    trace = agent_trace()
    runs = list(prepare(trace, [per_call]))
    assert [r.level for r in runs] == ["llm", "llm"] and all(r.span_id for r in runs)
    with pytest.raises(TypeError, match="annotate the first parameter"):

        @llm_judge(criteria="c")
        def no_level(subject) -> str:  # type: ignore[no-untyped-def]
            return "p"

    with pytest.raises(TypeError, match="level must be one of"):
        llm_judge(level="span")(lambda trace: "p")


def test_bare_decorator_and_defaults() -> None:
    @llm_judge
    def plain(trace: Trace) -> str:
        return "prompt"

    assert plain.name == "plain" and plain.threshold == 0.5 and plain.instructions == ""
    assert plain.model == "" and plain.request(agent_trace()).system == DATA_RULE  # type: ignore[union-attr]


def test_extra_parameters_become_params() -> None:
    @llm_judge(criteria="c")
    def mentions(trace: Trace, word: str = "Paris", times: int = Param(1, "how often", min=1)) -> str:
        return question(f"Does the answer say {word!r} {times} time(s)?")

    assert mentions.params["word"] == "Paris" and mentions.params["times"] == 1
    request = mentions.with_config(word="Lyon", times=2).request(agent_trace())
    assert isinstance(request, JudgeRequest) and "'Lyon' 2 time(s)" in request.prompt
    with pytest.raises(ValueError, match="times"):
        mentions.with_config(times=0)
    with pytest.raises(TypeError, match="needs a default"):

        @llm_judge
        def missing_default(trace: Trace, word: str) -> str:
            return word


def test_a_task_parameter_makes_a_ground_truth_judge() -> None:
    @llm_judge(criteria="Score 1 when the answer matches the reference.")
    def matches(trace: Trace, task: Task) -> str:
        return compose(
            data_block("reference", task.expected_output, 1000),
            data_block("answer", trace.output, 1000),
            question("Same?"),
        )

    assert matches.needs_ground_truth is True
    trace = agent_trace()
    task = Task(task_id="t", expected_output="Paris.")
    [monitor] = list(prepare(trace, [matches], task=task))
    assert monitor.result is not None and monitor.result.skip_reason == "needs_ground_truth"
    [experiment] = list(prepare(trace, [matches], mode="experiment", task=task))
    assert experiment.request is not None and blocks(experiment.request.prompt)["reference"] == "Paris."


def test_a_function_returning_something_else_is_an_error_skip() -> None:
    @llm_judge(criteria="c")
    def broken(trace: Trace) -> str:
        return 42  # type: ignore[return-value]

    with pytest.raises(TypeError, match="returned int"):
        broken.request(agent_trace())
    [run] = list(prepare(agent_trace(), [broken]))
    assert run.result is not None and run.result.skip_reason == "error"


def test_plain_functions_only() -> None:
    with pytest.raises(TypeError, match="plain function"):
        llm_judge(criteria="c")(politeness)
    with pytest.raises(TypeError, match="name must be a str"):
        llm_judge(3)  # type: ignore[call-overload]


def test_a_decorated_judge_registers_and_is_found_only_in_its_own_module() -> None:
    register(politeness)
    try:
        assert builtin("politeness").kind == "llm_judge"
        assert any(i.name == "politeness" and i.kind == "llm_judge" for i in list_builtins())
    finally:
        unregister("politeness")
    import tests.evaluators.judges.test_llm_judge_decorator as here

    assert politeness in evaluators_in_module(here)
    elsewhere = types.ModuleType("elsewhere")
    elsewhere.politeness = politeness  # type: ignore[attr-defined]
    assert evaluators_in_module(elsewhere) == []
    assert isinstance(politeness, FunctionEvaluator)


def test_the_plain_runner_cannot_call_a_model_and_says_so() -> None:
    result = politeness.run(agent_trace())
    assert result.skip_reason == "judge_unavailable"


def test_the_documented_judge_examples_work() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "evaluators.md").read_text()
    section = docs[docs.index("## LLM judges") : docs.index("## Datasets")]
    namespace: dict[str, Any] = {"__name__": "my_judges"}
    for code in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        exec(compile(code, "docs/evaluators.md", "exec", dont_inherit=True), namespace)
    metric = namespace["MetricUnits"]()
    request = metric.request(agent_trace(answer="It is 18°C."))
    assert isinstance(request, JudgeRequest) and blocks(request.prompt)["final_answer"] == "It is 18°C."
    reply = namespace["UnitsReply"](verdict="mixed", explanation="°C and miles")
    assert metric.to_result(reply).score == 0.5
    assert metric.request(agent_trace(answer=None)).skip_reason == "no_data"
    polite = namespace["politeness"]
    assert polite.level == "trace" and polite.threshold == 0.7
    assert isinstance(polite.request(agent_trace()), JudgeRequest)
