"""agent-monitor's evaluator SDK: trace views, the evaluator API and the builtin evaluators.

`from evaluators import load_traces` reads saved OTLP traces for offline evaluator tests.
"""

from .traces import *  # noqa: F403
from .traces import __all__ as _traces_all

__all__ = [*_traces_all]
