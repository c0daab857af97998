"""The rule builtins, registered in the catalog on import (see `evaluators.sdk.registry`).

The builtin LLM judges live in `evaluators.judges`; `evaluators.catalog` imports both packages, so the catalog
lists every builtin.
"""

from . import ground_truth, rules_agent, rules_llm, rules_sentiment, rules_session, rules_trace  # noqa: F401
