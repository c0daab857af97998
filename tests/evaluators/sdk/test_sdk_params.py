"""Param declaration and validation, constructor keywords, with_config / with_threshold, info and config_schema."""

from __future__ import annotations

import pytest

from evaluators.sdk import BaseEvaluator, EvalResult, EvaluatorConfigError, Param
from evaluators.traces.model import Trace


class Budget(BaseEvaluator):
    """Checks the trace stays within budgets."""

    name = "budget"
    threshold = 0.8
    aggregations = ("mean", "p95")
    max_errors = Param(0, "errors allowed", min=0)
    ratio = Param(0.5, "share of calls", min=0.0, max=1.0)
    mode = Param("strict", "how to count", choices=["strict", "lenient"])
    enabled = Param(True, "on or off")
    tools = Param(["search"], "tools to watch", choices=["search", "fetch", "calc"])
    label = Param(None, "optional label", type=str)

    def evaluate(self, trace: Trace, task=None) -> EvalResult:
        return EvalResult(self.ratio)


def test_defaults_are_read_through_the_attributes() -> None:
    budget = Budget()
    assert budget.max_errors == 0
    assert budget.ratio == 0.5
    assert budget.mode == "strict"
    assert budget.enabled is True
    assert budget.tools == ["search"]
    assert budget.label is None
    assert budget.params == {
        "max_errors": 0,
        "ratio": 0.5,
        "mode": "strict",
        "enabled": True,
        "tools": ["search"],
        "label": None,
    }


def test_keywords_configure_the_instance() -> None:
    budget = Budget(max_errors=3, ratio=1, mode="lenient", enabled=False, tools=("fetch", "calc"), label="x")
    assert budget.max_errors == 3
    assert budget.ratio == 1.0 and isinstance(budget.ratio, float)  # int accepted for a float param
    assert budget.tools == ["fetch", "calc"]  # a tuple becomes a list
    assert budget.label == "x"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_errors": "3"}, r"budget: param 'max_errors' must be an int, got str"),
        ({"max_errors": 1.5}, r"budget: param 'max_errors' must be an int, got float"),
        ({"max_errors": True}, r"budget: param 'max_errors' must be an int, got bool"),
        ({"max_errors": -1}, r"budget: param 'max_errors' must be >= 0, got -1"),
        ({"ratio": 1.5}, r"budget: param 'ratio' must be <= 1.0, got 1.5"),
        ({"ratio": float("nan")}, r"budget: param 'ratio' must be a number, got NaN"),
        ({"ratio": "high"}, r"budget: param 'ratio' must be a number, got str"),
        ({"mode": "loose"}, r"budget: param 'mode' must be one of \['strict', 'lenient'\], got 'loose'"),
        ({"enabled": 1}, r"budget: param 'enabled' must be a bool, got int"),
        ({"tools": ["search", "rm"]}, r"budget: param 'tools' must be one of .*, got 'rm'"),
        ({"tools": "search"}, r"budget: param 'tools' must be a list, got str"),
        ({"label": 3}, r"budget: param 'label' must be a str, got int"),
    ],
)
def test_bad_values_name_the_evaluator_and_the_param(kwargs: dict, message: str) -> None:
    with pytest.raises(EvaluatorConfigError, match=message):
        Budget(**kwargs)


def test_config_errors_are_both_value_and_type_errors() -> None:
    with pytest.raises(ValueError):
        Budget(ratio=2)
    with pytest.raises(TypeError):
        Budget(ratio="x")


def test_unknown_keyword_is_rejected_by_name() -> None:
    with pytest.raises(EvaluatorConfigError, match=r"budget: unknown param 'max_error' \(known params: max_errors, "):
        Budget(max_error=1)
    with pytest.raises(TypeError, match="unknown param 'threshold'"):
        Budget(threshold=0.2)


def test_with_config_returns_a_new_instance_and_leaves_the_original() -> None:
    original = Budget(max_errors=1)
    changed = original.with_config(ratio=0.9)
    assert changed is not original
    assert isinstance(changed, Budget)
    assert (changed.max_errors, changed.ratio) == (1, 0.9)
    assert (original.max_errors, original.ratio) == (1, 0.5)
    with pytest.raises(EvaluatorConfigError, match="param 'ratio'"):
        original.with_config(ratio=3)
    with pytest.raises(EvaluatorConfigError, match="unknown param 'nope'"):
        original.with_config(nope=1)


def test_with_threshold_returns_a_new_instance() -> None:
    original = Budget(max_errors=2)
    stricter = original.with_threshold(0.95)
    assert (stricter.threshold, original.threshold) == (0.95, 0.8)
    assert stricter.max_errors == 2
    assert stricter.with_config(ratio=0.1).threshold == 0.95  # an instance threshold survives with_config
    with pytest.raises(ValueError, match="threshold"):
        original.with_threshold(1.5)


def test_params_are_read_only_on_instances() -> None:
    budget = Budget()
    with pytest.raises(AttributeError, match="with_config"):
        budget.max_errors = 5
    assert budget.max_errors == 0


def test_mutable_defaults_are_not_shared() -> None:
    first, second = Budget(), Budget()
    first.params["tools"].append("fetch")
    first._params["tools"].append("calc")
    assert second.tools == ["search"]
    assert Budget.tools.default == ["search"]


def test_a_bad_default_fails_at_class_definition() -> None:
    with pytest.raises(EvaluatorConfigError, match="broken: param 'limit' must be >= 1, got 0"):

        class Broken(BaseEvaluator):
            name = "broken"
            level = "trace"
            limit = Param(0, min=1)


def test_params_are_inherited_and_rebound_to_the_subclass() -> None:
    class Stricter(Budget):
        name = "stricter"
        extra = Param(2, min=0)

    assert list(Stricter._param_defs) == ["max_errors", "ratio", "mode", "enabled", "tools", "label", "extra"]
    assert Stricter().level == "trace"
    with pytest.raises(EvaluatorConfigError, match="stricter: param 'ratio'"):
        Stricter(ratio=5)
    with pytest.raises(EvaluatorConfigError, match="budget: param 'ratio'"):
        Budget(ratio=5)  # the parent's param is not renamed


def test_info_describes_the_evaluator() -> None:
    info = Budget(max_errors=4).info
    assert info.name == "budget"
    assert info.level == "trace"
    assert info.description == "Checks the trace stays within budgets."
    assert info.threshold == 0.8
    assert info.aggregations == ["mean", "p95"]
    assert info.needs_ground_truth is False
    assert info.kind == "rule"
    assert info.config["max_errors"] == 4
    by_name = {p.name: p for p in info.params}
    assert by_name["max_errors"].default == 0  # the declared default, not the configured value
    assert (by_name["ratio"].min, by_name["ratio"].max) == (0.0, 1.0)
    assert by_name["mode"].choices == ["strict", "lenient"]
    assert by_name["mode"].description == "how to count"


def test_config_schema() -> None:
    schema = Budget().info.config_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["max_errors"] == {"type": "integer", "default": 0, "minimum": 0, "description": "errors allowed"}
    assert props["ratio"] == {
        "type": "number",
        "default": 0.5,
        "minimum": 0.0,
        "maximum": 1.0,
        "description": "share of calls",
    }
    assert props["mode"] == {
        "type": "string",
        "default": "strict",
        "enum": ["strict", "lenient"],
        "description": "how to count",
    }
    assert props["enabled"]["type"] == "boolean"
    assert props["tools"]["type"] == "array"
    assert props["tools"]["items"] == {"enum": ["search", "fetch", "calc"]}
    assert props["label"]["type"] == ["string", "null"]
    assert props["label"]["default"] is None


def test_class_name_becomes_the_default_name() -> None:
    class ToolErrorRateEvaluator(BaseEvaluator):
        def evaluate(self, trace: Trace, task=None) -> float:
            return 1.0

    assert ToolErrorRateEvaluator.name == "tool_error_rate"
    assert ToolErrorRateEvaluator().info.description == ""


def test_bad_class_settings_fail_early() -> None:
    with pytest.raises(TypeError, match="level must be one of"):

        class BadLevel(BaseEvaluator):
            level = "span"

    with pytest.raises(TypeError, match="unknown aggregation 'p101'"):

        class BadAggregation(BaseEvaluator):
            level = "trace"
            aggregations = ("mean", "p101")

    with pytest.raises(ValueError, match="threshold"):

        class BadThreshold(BaseEvaluator):
            level = "trace"
            threshold = 2


def test_param_arguments_can_be_positional() -> None:
    param = Param(5, "a bound", 1, 10, None, int)
    assert (param.default, param.description, param.min, param.max, param.type) == (5, "a bound", 1, 10, int)
