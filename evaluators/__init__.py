"""agent-monitor's evaluator SDK: trace views, the evaluator API and the builtin evaluators.

`from evaluators import load_traces` reads saved OTLP traces for offline evaluator tests.
"""

from .sdk import (
    BaseEvaluator,
    Constraints,
    Dataset,
    EvalResult,
    EvaluationRecord,
    EvaluatorConfigError,
    EvaluatorInfo,
    Param,
    SkipReason,
    Task,
    TrajectoryStep,
    aggregate,
    builtin,
    evaluator,
    list_builtins,
    load_evaluator,
    register,
    run_evaluators,
)
from .signatures import Failure, FailureSignature
from .traces import *  # noqa: F403
from .traces import __all__ as _traces_all

__all__ = [
    *_traces_all,
    "BaseEvaluator",
    "Constraints",
    "Dataset",
    "EvalResult",
    "EvaluationRecord",
    "EvaluatorConfigError",
    "EvaluatorInfo",
    "Failure",
    "FailureSignature",
    "Param",
    "SkipReason",
    "Task",
    "TrajectoryStep",
    "aggregate",
    "builtin",
    "evaluator",
    "list_builtins",
    "load_evaluator",
    "register",
    "run_evaluators",
]
