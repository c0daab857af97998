"""agent-monitor: the daemon built on the evaluators SDK."""

__version__ = "0.1.0"
