"""An evaluator module whose import breaks the OTel GenAI normalizer's `span_kind` (it raises on every span): how
a normalizer bug looks to an evaluation worker process, which imports this module to build its evaluators.

Imported only by a worker process, never by a test module: importing it patches the SDK for the whole process.
"""

from evaluators.sdk import evaluator
from evaluators.traces.conventions.otel_genai import OTelGenAI


def raising_span_kind(self, span):
    raise ValueError(f"normalizer bug on span {span.name!r}")


OTelGenAI.span_kind = raising_span_kind  # type: ignore[method-assign]


@evaluator(name="span_count", level="trace")
def span_count(trace) -> float:
    return float(len(trace.spans))
