"""Offline evaluation, the engine behind `agent-monitor evaluate`, `compare` and `poll`: the evaluators a spec
selects (`spec`), datasets and tasks matched to traces, the run and its report (`evaluation`), on every core
(`parallel`), with LLM judges (`judges`), conversations (`sessions`, `session_records`), failure signatures
(`signatures`) and spend (`spend`). The commands in `monitor.commands` print what it returns.

The public modules are the ones `__all__` names; `records` is internal to the package. Importing the package
imports none of its modules.
"""

__all__ = ["evaluation", "judges", "parallel", "session_records", "sessions", "signatures", "spec", "spend"]
