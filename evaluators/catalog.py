"""The builtin catalog: importing this module registers every builtin evaluator (see `evaluators.sdk.registry`).

The rule builtins live in `evaluators.builtins`, the builtin LLM judges in `evaluators.judges` (kind
`llm_judge`, or `pairwise_judge` for the judges of pairs that `variants.pairwise` runs; never in the default
set). Neither package imports the other's evaluators: this module brings both into the catalog.
"""

from evaluators import builtins  # noqa: F401
from evaluators.judges import (  # noqa: F401
    builtins_agent,
    builtins_ground_truth,
    builtins_llm,
    builtins_pairwise,
    builtins_rag,
    builtins_rubric,
    builtins_session,
    builtins_task,
    builtins_trace,
)
