"""One module per `agent-monitor` subcommand, each run by `monitor.cli`.

The public modules are the subcommands `__all__` names, and `daemon_address` (where the config, the daemon and its
store are, which `run` in monitor.cli shares); their other shared helpers (the review's rendering and its source)
are internal to the package; offline evaluation, which `evaluate`, `compare` and `poll` run, is
`monitor.offline`. Importing the package imports none of its modules.
"""

__all__ = [
    "calibrate_cmd",
    "changes_cmd",
    "check_config",
    "compare_cmd",
    "daemon_address",
    "dataset_cmd",
    "evaluate_cmd",
    "evaluators_cmd",
    "explain_cmd",
    "health_cmd",
    "inspect_cmd",
    "poll_cmd",
    "review_cmd",
    "rules_cmd",
    "signatures_cmd",
]
