"""@evaluator: level and task detection, params from keyword defaults, return values, class-based level."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from evaluators import load_traces
from evaluators.sdk import BaseEvaluator, EvalResult, EvaluatorConfigError, FunctionEvaluator, Param, Task, evaluator
from evaluators.traces.model import AgentTrace, LLMSpan, Trace
from tests.evaluators.sdk import sdk_fixture_evals as fx


@pytest.fixture(scope="module")
def handoff_trace(corpus_dir: Path) -> Trace:
    [trace] = load_traces(corpus_dir / "adk_native__handoff")
    return trace


def test_levels_from_a_module_with_postponed_annotations() -> None:
    assert fx.span_count.level == "trace"
    assert fx.agent_steps.level == "agent"
    assert fx.llm_model.level == "llm"  # LLMSpan is only imported under TYPE_CHECKING there
    assert fx.SpanBudget.level == "trace"  # from evaluate's annotation


def test_task_detection() -> None:
    assert fx.exact_answer.needs_ground_truth is True
    assert fx.exact_answer.info.needs_ground_truth is True
    assert fx.agent_steps.needs_ground_truth is False  # `task: Task | None = None` adapts
    assert fx.agent_steps._accepts_task is True
    assert fx.span_count.needs_ground_truth is False
    assert fx.span_count._accepts_task is False
    assert fx.SpanBudget.needs_ground_truth is False


def test_decorated_function_is_a_configurable_evaluator_instance() -> None:
    ev = fx.span_count
    assert isinstance(ev, BaseEvaluator) and isinstance(ev, FunctionEvaluator)
    assert ev.name == "fixture_span_count"
    assert ev.threshold == 0.5
    assert ev.info.aggregations == ["mean", "p90"]
    assert ev.description == "Passes when the trace has at least `min_spans` spans."
    assert ev.params == {"min_spans": 1}
    assert ev.info.config_schema["properties"]["min_spans"] == {"type": "integer", "default": 1}
    strict = ev.with_config(min_spans=5)
    assert strict.min_spans == 5 and ev.min_spans == 1
    assert strict.name == ev.name and strict.level == "trace"
    with pytest.raises(EvaluatorConfigError, match="fixture_span_count: param 'min_spans' must be an int"):
        ev.with_config(min_spans="5")
    with pytest.raises(EvaluatorConfigError, match="fixture_span_count: unknown param 'min'"):
        ev.with_config(min=5)


def test_string_annotations_without_future_import() -> None:
    def check(call: "LLMSpan") -> float:  # noqa: UP037 - the string form is the point
        return 1.0

    assert evaluator("s")(check).level == "llm"


@pytest.mark.parametrize(
    ("annotation", "level"),
    [(Trace, "trace"), (AgentTrace, "agent"), (LLMSpan, "llm"), (Optional[Trace], "trace"), ("AgentTrace", "agent")],  # noqa: UP045
)
def test_level_for_each_subject_type(annotation: object, level: str) -> None:
    def check(subject) -> float:
        return 1.0

    check.__annotations__ = {"subject": annotation}
    assert evaluator("x")(check).level == level


def test_first_parameter_must_be_a_subject_type() -> None:
    def untyped(trace) -> float:
        return 1.0

    def wrong(trace: dict) -> float:
        return 1.0

    with pytest.raises(TypeError, match="annotate the first parameter 'trace' with Trace, AgentTrace or LLMSpan"):
        evaluator("untyped")(untyped)
    with pytest.raises(TypeError, match=r"got dict"):
        evaluator("wrong")(wrong)
    assert evaluator("explicit", level="agent")(untyped).level == "agent"
    with pytest.raises(TypeError, match="level must be one of"):
        evaluator("bad", level="span")(untyped)


def test_extra_parameters_need_defaults_and_become_params() -> None:
    def no_default(trace: Trace, limit: int) -> float:
        return 1.0

    with pytest.raises(TypeError, match="parameter 'limit' needs a default"):
        evaluator("nd")(no_default)

    @evaluator("typed")
    def typed(
        trace: Trace,
        ratio: float = 1,
        label: str | None = None,
        words: list[str] | None = None,
        bound: int = Param(3, "a bound", min=1),
    ) -> float:
        return ratio

    assert typed.ratio == 1.0 and isinstance(typed.ratio, float)  # the annotation says float
    assert typed.with_config(label="x").label == "x"
    with pytest.raises(EvaluatorConfigError, match="typed: param 'label' must be a str"):
        typed.with_config(label=3)
    with pytest.raises(EvaluatorConfigError, match="typed: param 'words' must be a list"):
        typed.with_config(words="a")
    with pytest.raises(EvaluatorConfigError, match="typed: param 'bound' must be >= 1"):
        typed.with_config(bound=0)
    assert typed.info.params[3].description == "a bound"


def test_return_values_become_results(handoff_trace: Trace) -> None:
    @evaluator("as_float")
    def as_float(trace: Trace, value: float = 0.7) -> float:
        return value

    @evaluator("as_bool")
    def as_bool(trace: Trace, value: bool = True) -> bool:
        return value

    @evaluator("as_result", threshold=0.9)
    def as_result(trace: Trace) -> EvalResult:
        return EvalResult(0.8, explanation="close")

    assert as_float.run(handoff_trace) == EvalResult(0.7, passed=True)
    assert as_float.with_config(value=0.2).run(handoff_trace).passed is False
    assert as_bool.run(handoff_trace) == EvalResult(1.0, passed=True)
    assert as_bool.with_config(value=False).run(handoff_trace) == EvalResult(0.0, passed=False)
    assert as_result.run(handoff_trace) == EvalResult(0.8, passed=False, explanation="close")
    with pytest.raises(ValueError, match=r"as_float: returned score must be in \[0, 1\]"):
        as_float.with_config(value=3.0).run(handoff_trace)

    @evaluator("as_none")
    def as_none(trace: Trace) -> None:
        return None

    with pytest.raises(TypeError, match="as_none: returned NoneType"):
        as_none.run(handoff_trace)


def test_passed_is_always_score_at_or_above_the_threshold(handoff_trace: Trace) -> None:
    @evaluator("own_verdict", threshold=0.5)
    def own_verdict(trace: Trace, score: float = 0.3) -> EvalResult:
        return EvalResult(score, passed=True)  # an evaluator's own verdict does not decide

    @evaluator("as_bool")
    def as_bool(trace: Trace) -> bool:
        return False

    with pytest.warns(UserWarning, match=r"own_verdict: the evaluator's own passed=True is replaced"):
        assert own_verdict.run(handoff_trace).passed is False
    assert own_verdict.with_threshold(0.2).run(handoff_trace).passed is True
    assert as_bool.run(handoff_trace).passed is False
    assert as_bool.with_threshold(0.0).run(handoff_trace).passed is True  # threshold 0: every score passes


def test_calling_the_evaluator_calls_the_function(handoff_trace: Trace) -> None:
    assert fx.span_count(handoff_trace).score == 1.0
    assert fx.span_count(handoff_trace, min_spans=10_000).score == 0.0
    assert fx.span_count(handoff_trace, 10_000).score == 0.0  # positionally too
    assert fx.span_count.with_config(min_spans=10_000)(handoff_trace).score == 0.0  # configured params fill in
    assert fx.span_count.__wrapped__.__name__ == "span_count"


def test_task_is_passed_only_when_the_function_takes_one(handoff_trace: Trace) -> None:
    seen: list[object] = []

    @evaluator("adapts")
    def adapts(trace: Trace, task: Task | None = None) -> float:
        seen.append(task)
        return 1.0

    task = Task(task_id="t1")
    adapts.run(handoff_trace)
    adapts.run(handoff_trace, task=task)
    assert seen == [None, task]
    assert fx.span_count.run(handoff_trace, task=task).score == 1.0  # no task parameter: not passed


def test_bare_decorator_uses_the_function_name() -> None:
    @evaluator
    def quick_check(trace: Trace) -> bool:
        """Quick."""
        return True

    assert quick_check.name == "quick_check"
    assert quick_check.description == "Quick."
    assert quick_check.description != FunctionEvaluator.description


def test_reserved_or_unsupported_parameters() -> None:
    def reserved(trace: Trace, threshold: float = 0.5) -> float:
        return 1.0

    def star(trace: Trace, **kwargs) -> float:
        return 1.0

    with pytest.raises(TypeError, match="'threshold' is reserved"):
        evaluator("r")(reserved)
    with pytest.raises(TypeError, match=r"\*\*kwargs"):
        evaluator("s")(star)


def test_class_based_level_and_ground_truth_from_evaluate() -> None:
    class PerCall(BaseEvaluator):
        def evaluate(self, call: LLMSpan, task: Task) -> float:
            return 1.0

    class NoTask(BaseEvaluator):
        def evaluate(self, agent: AgentTrace) -> float:
            return 1.0

    class Unknown(BaseEvaluator):
        def evaluate(self, subject, task=None) -> float:
            return 1.0

    assert (PerCall.level, PerCall.needs_ground_truth) == ("llm", True)
    assert (NoTask.level, NoTask.needs_ground_truth, NoTask._accepts_task) == ("agent", False, False)
    with pytest.raises(TypeError, match="unknown: cannot tell the evaluator's level"):
        Unknown()
