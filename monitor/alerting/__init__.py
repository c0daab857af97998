"""Alerting: thresholds on pass ratios (in-process state now, Prometheus rule generation next)."""
