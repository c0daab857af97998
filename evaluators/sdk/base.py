"""BaseEvaluator: the class every evaluator is (class-based ones subclass it; @evaluator builds one)."""

from __future__ import annotations

import copy
import inspect
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from .aggregations import DEFAULT_AGGREGATIONS, is_aggregation
from .introspect import first_line, level_for, resolve_hints, snake_case
from .params import EvaluatorConfigError, Param, ParamInfo, config_schema
from .result import DEFAULT_THRESHOLD, LEVELS, EvalResult, check_score

if TYPE_CHECKING:
    from .task import Task


class EvaluatorInfo(BaseModel):
    """What an evaluator is and how it can be configured (for catalogs, config checks and docs)."""

    name: str
    level: str
    description: str = ""
    kind: str = "rule"
    needs_ground_truth: bool = False
    needs_config: bool = False
    threshold: float = DEFAULT_THRESHOLD
    aggregations: list[str] = Field(default_factory=list)
    params: list[ParamInfo] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    config_schema: dict[str, Any] = Field(default_factory=dict)


class BaseEvaluator:
    """An evaluator of traces, agents or LLM calls.

    Subclasses set `name` (default: the class name in snake_case), `level` (default: from the annotation of
    `evaluate`'s first parameter: Trace, AgentTrace or LLMSpan), `threshold`, `description` (default: the
    docstring's first line), `aggregations`, `kind` ("rule", "llm_judge", ...), `needs_config` (True when it
    cannot score with its default params, which keeps a builtin out of the default set) and Params as class
    attributes, and implement `evaluate(subject, task=None)`. A result passes when its score >= `threshold`
    (one rule for every evaluator). A `task` parameter without a default marks the evaluator as needing
    ground truth. Subclasses overriding `__init__` must accept `**params` and pass them to `super()`.
    """

    name: str = ""
    level: str | None = None
    threshold: float = DEFAULT_THRESHOLD
    description: str = ""
    aggregations: tuple[str, ...] | list[str] | None = None
    kind: str = "rule"
    needs_ground_truth: bool | None = None
    needs_config: bool = False

    _param_defs: ClassVar[dict[str, Param]] = {}
    _accepts_task: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if not own.get("name"):
            cls.name = snake_case(cls.__name__)
        if not own.get("description"):
            cls.description = first_line(cls.__doc__)  # never inherited: a description is about one evaluator
        cls._param_defs = _collect_params(cls)
        if "evaluate" in own:
            _read_evaluate_signature(cls)
        if cls.level is not None and cls.level not in LEVELS:
            raise TypeError(f"{cls.name}: level must be one of {LEVELS}, got {cls.level!r}")
        check_score(cls.threshold, f"{cls.name}: threshold")
        for aggregation in cls.aggregations or ():
            if not is_aggregation(aggregation):
                raise TypeError(f"{cls.name}: unknown aggregation {aggregation!r}")

    def __init__(self, **params: Any) -> None:
        cls = type(self)
        if self.level is None:
            raise TypeError(
                f"{self.name}: cannot tell the evaluator's level; set level = 'trace', 'agent' or 'llm', or "
                "annotate the first parameter of evaluate() with Trace, AgentTrace or LLMSpan"
            )
        unknown = [key for key in params if key not in cls._param_defs]
        if unknown:
            known = ", ".join(cls._param_defs) or "none"
            names = ", ".join(repr(k) for k in unknown)
            problem = f"{self.name}: unknown param {names} (known params: {known})"
            raise EvaluatorConfigError(problem, param=unknown[0])
        self._params: dict[str, Any] = {
            key: param.validate(params[key]) if key in params else copy.deepcopy(param.default)
            for key, param in cls._param_defs.items()
        }

    # --- configuration ---------------------------------------------------------------------------
    @property
    def params(self) -> dict[str, Any]:
        """The configured param values (a copy)."""
        return copy.deepcopy(self._params)

    def with_config(self, **params: Any) -> BaseEvaluator:
        """A new evaluator with these params changed; this one is left as it is."""
        new = type(self)(**{**self._params, **params})
        if "threshold" in self.__dict__:
            new.threshold = self.threshold
        return new

    def with_threshold(self, threshold: float) -> BaseEvaluator:
        """A new evaluator passing at `score >= threshold`; this one is left as it is."""
        new = copy.copy(self)
        new.threshold = check_score(threshold, f"{self.name}: threshold")
        return new

    @property
    def info(self) -> EvaluatorInfo:
        defs = type(self)._param_defs
        return EvaluatorInfo(
            name=self.name,
            level=str(self.level),
            description=self.description,
            kind=self.kind,
            needs_ground_truth=bool(self.needs_ground_truth),
            needs_config=bool(self.needs_config),
            threshold=self.threshold,
            aggregations=list(self.aggregations or DEFAULT_AGGREGATIONS),
            params=[p.info() for p in defs.values()],
            config=self.params,
            config_schema=config_schema(self.name, defs),
        )

    # --- evaluation ------------------------------------------------------------------------------
    def evaluate(self, *args: Any, **kwargs: Any) -> EvalResult | float | bool:
        """Score one subject (a Trace, AgentTrace or LLMSpan, per `level`). Override this.

        Overrides take the subject and, optionally, `task`: `evaluate(self, trace: Trace)`, `evaluate(self, agent:
        AgentTrace, task: Task | None = None)`, ... The `*args: Any, **kwargs: Any` here is what lets a type checker
        accept those narrower signatures (it reads it as `...`); `run` calls it as `evaluate(subject[, task=task])`.
        """
        raise NotImplementedError(f"{type(self).__name__}.evaluate is not implemented")

    def run(self, subject: Any, task: Task | None = None) -> EvalResult:
        """`evaluate`, with its return value made an EvalResult and `passed` set to `score >= threshold`."""
        returned = self.evaluate(subject, task=task) if self._accepts_task else self.evaluate(subject)
        result = returned if type(returned) is EvalResult else to_result(returned, self.name)
        resolved = result.resolve(self.threshold)
        if result.passed is not None and result.passed != resolved.passed:
            warnings.warn(
                f"{self.name}: the evaluator's own passed={result.passed} is replaced by the threshold's verdict "
                f"(score >= {self.threshold:g}); return a score and set the evaluator's threshold instead",
                UserWarning,
                stacklevel=2,
            )
        return resolved

    def __repr__(self) -> str:
        config = ", ".join(f"{k}={v!r}" for k, v in self._params.items()) if hasattr(self, "_params") else ""
        return f"<{type(self).__name__} {self.name!r} level={self.level}{' ' + config if config else ''}>"


def to_result(returned: Any, name: str = "evaluator") -> EvalResult:
    """An EvalResult from what an evaluator returned: an EvalResult, a score, or a bool (1.0 / 0.0)."""
    if isinstance(returned, EvalResult):
        return returned
    if isinstance(returned, bool):
        return EvalResult(1.0 if returned else 0.0)
    if isinstance(returned, int | float):
        return EvalResult(check_score(returned, f"{name}: returned score"))
    raise TypeError(f"{name}: returned {type(returned).__name__}; expected an EvalResult, a float score or a bool")


def _collect_params(cls: type[BaseEvaluator]) -> dict[str, Param]:
    """The class's Params, inherited ones first; each bound (named, checked) for this class."""
    found: dict[str, Param] = {}
    for klass in reversed(cls.__mro__):
        for key, value in vars(klass).items():
            if isinstance(value, Param):
                found[key] = value
            elif key in found:
                del found[key]  # overridden by a plain attribute
    for key, param in found.items():
        if key not in cls.__dict__:
            param = copy.copy(param)  # inherited: rebind a copy so messages name this evaluator
            setattr(cls, key, param)
            found[key] = param
        param.bind(key, cls.name)
    return found


def _read_evaluate_signature(cls: type[BaseEvaluator]) -> None:
    """Level (when not set), task handling and ground-truth need, from the signature of `evaluate`."""
    signature = inspect.signature(cls.evaluate)
    params = list(signature.parameters.values())[1:]  # without self
    if cls.level is None and params:
        cls.level = level_for(resolve_hints(cls.evaluate).get(params[0].name, params[0].annotation))
    task = signature.parameters.get("task")
    has_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    cls._accepts_task = task is not None or has_kwargs
    if "needs_ground_truth" not in cls.__dict__:
        cls.needs_ground_truth = task is not None and task.default is inspect.Parameter.empty
