"""The fake trace stores' OTLP JSON decodes back to the corpus spans it was built from."""

from evaluators.traces.otlp_json import decode_traces_object
from tests.support.otlp_json import corpus_traces, otlp_document


def test_corpus_spans_survive_the_otlp_json_the_fake_stores_serve() -> None:
    traces = corpus_traces("oi_openai__tool_agent", "otel_genai__tool_error")
    assert len(traces) >= 2
    for spans in traces.values():
        back = decode_traces_object(otlp_document(spans)).spans
        fields = [(s.span_id, s.parent_span_id, s.name, s.attributes, s.resource_attributes, s.start_time_unix_nano,
                   s.end_time_unix_nano, s.status_code) for s in spans]  # fmt: skip
        assert [(s.span_id, s.parent_span_id, s.name, s.attributes, s.resource_attributes, s.start_time_unix_nano,
                 s.end_time_unix_nano, s.status_code) for s in back] == fields  # fmt: skip
