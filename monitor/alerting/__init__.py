"""Alerting: in-process thresholds on pass ratios (`thresholds`) and Prometheus rule generation (`rules`).

The public modules are the ones `__all__` names; the rule builders behind `rules` (quality, SLO, canary and health
rules, their shared context and PromQL helpers) are internal to the package. Importing the package imports none of
its modules.
"""

__all__ = ["rules", "thresholds"]
