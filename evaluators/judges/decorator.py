"""@llm_judge: turn a prompt-building function into an LLM judge (an LLMJudge instance).

```python
@llm_judge(criteria="Score 1 when the answer is polite, 0 when it is not.", threshold=0.5)
def politeness(trace: Trace, max_data_chars: int = 4000) -> str | EvalResult:
    if trace.output is None:
        return EvalResult.skip("no_data", "no answer")
    return compose(data_block("answer", trace.output, max_data_chars), question("Is the answer polite?"))
```

The function gets the subject and returns the user message (data blocks, then the question) or an
EvalResult skip. `criteria` is the judge's rubric (its `instructions`); the reply is a `JudgeVerdict`
(score, verdict, explanation). Like `@evaluator`: the level comes from the first parameter's annotation
(Trace, AgentTrace, LLMSpan) unless `level=` is given; other parameters need defaults and become Params;
`task: Task` without a default makes a ground-truth judge. A parameter named like a setting every judge
has (`max_data_chars`, `model`, ...) receives the judge's configured value instead of becoming a new Param.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar, overload

from ..sdk.decorator import (
    FunctionEvaluator,
    _param_for,
    bare_or_named,
    function_level,
    function_namespace,
    function_signature,
)
from ..sdk.params import Param
from ..sdk.result import DEFAULT_THRESHOLD, EvalResult
from .base import LLMJudge


class FunctionJudge(LLMJudge, FunctionEvaluator):
    """A judge made by @llm_judge: `build_prompt` calls the function with the configured params.

    It is also a FunctionEvaluator, so module discovery treats it like an @evaluator function (listed
    only by the module that defines it). Calling the judge calls the function: it returns the prompt.
    """

    _func: ClassVar[Callable[..., Any]]
    _func_params: ClassVar[tuple[str, ...]] = ()

    def _arguments(self, task: Any) -> dict[str, Any]:
        kwargs = {key: self._params[key] for key in type(self)._func_params}
        if self._accepts_task:
            kwargs["task"] = task
        return kwargs

    def build_prompt(self, subject: Any, task: Any = None) -> str | EvalResult:
        built = type(self)._func(subject, **self._arguments(task))
        if not isinstance(built, str | EvalResult):
            raise TypeError(
                f"{self.name}: the prompt function returned {type(built).__name__}; expected a str or an EvalResult"
            )
        return built

    def __call__(self, subject: Any, task: Any = None) -> Any:
        return self.build_prompt(subject, task)


@overload
def llm_judge(name: Callable[..., Any], /) -> FunctionJudge: ...


@overload
def llm_judge(
    name: str | None = None,
    *,
    criteria: str = "",
    model: str = "",
    level: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    description: str = "",
    num_samples: int = 1,
) -> Callable[[Callable[..., Any]], FunctionJudge]: ...


def llm_judge(
    name: str | Callable[..., Any] | None = None,
    *,
    criteria: str = "",
    model: str = "",
    level: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    description: str = "",
    num_samples: int = 1,
) -> Any:
    """Make the decorated prompt function an LLM judge: `@llm_judge(criteria="...", threshold=0.7)` (or bare).

    `criteria`: the rubric the judge model gets (what to judge, how to score 0–1); `model`: the judge's
    Gemini model ("" = the judges section's); `num_samples`: replies per judgement (majority vote).
    """
    options = {
        "criteria": criteria,
        "model": model,
        "level": level,
        "threshold": threshold,
        "description": description,
        "num_samples": num_samples,
    }
    return bare_or_named(name, lambda func, named: build_function_judge(func, named, **options), "llm_judge")


def build_function_judge(func: Callable[..., Any], name: str | None, **options: Any) -> FunctionJudge:
    """The judge instance for `func` (a fresh FunctionJudge subclass holding its Params)."""
    label, where, parameters, hints = function_signature(func, name, "llm_judge")
    level = function_level(options["level"], parameters[0], hints, where)
    inherited = LLMJudge._param_defs
    namespace = function_namespace(func, label, level, options["threshold"], options["description"])
    namespace.update(
        instructions=options["criteria"],
        model=Param(options["model"], inherited["model"].description),
        num_samples=Param(options["num_samples"], inherited["num_samples"].description, min=1, max=9),
    )
    passed: list[str] = []
    for param in parameters[1:]:
        if param.name == "task":
            namespace["_accepts_task"] = True
            namespace["needs_ground_truth"] = param.default is inspect.Parameter.empty
            continue
        if param.name in inherited:
            passed.append(param.name)  # receives the judge's own setting
            continue
        namespace[param.name] = _param_for(param, hints.get(param.name), where)
        passed.append(param.name)
    namespace["_func_params"] = tuple(passed)
    cls = type(func.__name__, (FunctionJudge,), namespace)
    return cls()
