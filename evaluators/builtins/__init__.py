"""The builtin evaluators, registered in the catalog on import (see `evaluators.sdk.registry`).

The rule builtins live here; the builtin LLM judges live in `evaluators.judges` and are imported here so
the catalog lists them too (kind `llm_judge`, or `pairwise_judge` for the judges of pairs that
`variants.pairwise` runs; never in the default set).
"""

from evaluators.judges import (  # noqa: F401
    builtins_agent,
    builtins_ground_truth,
    builtins_llm,
    builtins_pairwise,
    builtins_rag,
    builtins_rubric,
    builtins_task,
    builtins_trace,
)

from . import ground_truth, rules_agent, rules_llm, rules_trace  # noqa: F401
