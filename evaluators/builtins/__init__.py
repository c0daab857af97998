"""The builtin evaluators, registered in the catalog on import (see `evaluators.sdk.registry`)."""

from . import ground_truth, rules_agent, rules_llm, rules_trace  # noqa: F401
