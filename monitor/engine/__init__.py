"""The engine: ingest and admission, trace assembly, evaluation workers, judge and pairwise stages, evaluator
setup.

The public modules are the ones `__all__` names (what the daemon wires and the commands use); the worker side
(`worker_process`, `batch_run`, `capacity_probe`), the wire format of a trace (`trace_wire`), span sizes and the
pairing book are internal to the package. Importing the package imports none of its modules.
"""

__all__ = [
    "admission",
    "assembler",
    "configured",
    "dispatcher",
    "drain",
    "evaluation_export",
    "evaluator_setup",
    "gc_tuning",
    "ingest",
    "judge_setup",
    "judge_stage",
    "late_evaluations",
    "pairwise_stage",
    "pending",
    "poll_intake",
    "pool",
    "recorder",
    "signing",
    "trace_evaluation",
    "turn_wire",
    "variants",
]
