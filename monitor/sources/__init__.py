"""Poll mode: trace stores read on a schedule (sources), with checkpoints, beside the OTLP receivers.

The public modules are the ones `__all__` names: the source contract (`base`), building sources from the config
(`factory`), the pollers and their scheduler, the runner and the checkpoints, and the `phoenix` package (its
source and what is written back to Phoenix). The other sources (Tempo, Jaeger, AMP, OTLP files), their HTTP
client, guard, errors and the write-back hook are internal to the package.
Importing the package imports none of its modules.
"""

__all__ = [
    "base",
    "checkpoints",
    "factory",
    "phoenix",
    "pollers",
    "runner",
    "scheduler",
]
