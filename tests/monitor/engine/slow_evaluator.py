"""A trace-level evaluator that takes 50 ms, so a test can kill a worker while it is busy."""

import time

from evaluators.sdk import evaluator


@evaluator(name="slow", level="trace")
def slow(trace) -> float:
    time.sleep(0.05)
    return 1.0


@evaluator(name="stuck", level="trace")
def stuck(trace) -> float:
    time.sleep(120)
    return 1.0
