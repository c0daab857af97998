"""Evaluation results out: every result (by `export.evaluations.results`) as an OpenTelemetry
`gen_ai.evaluation.result` log record over OTLP, beside the store writes (`records` builds them, `exporter` queues
and sends them, `counts` counts them by outcome, `from_config` builds the process's exporter, `tee` joins it to a
store write).

The public modules are the ones `__all__` names. Importing the package imports none of its modules.
"""

__all__ = ["counts", "exporter", "from_config", "records", "tee"]
