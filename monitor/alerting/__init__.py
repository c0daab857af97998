"""Alerting: in-process thresholds on pass ratios (`thresholds`) and Prometheus rule generation (`rules`)."""
