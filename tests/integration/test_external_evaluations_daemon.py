"""Issue 43, "In": an instrumented application emits OpenTelemetry's `gen_ai.evaluation.result` events with the
real SDK (log records through its OTLP/HTTP log exporter, parented to the evaluated LLM span; one as a span event,
the older way), and the real daemon counts them as results of external evaluators —
`agent_eval_results_total{evaluator=<name>,source="external"}` — lists them in the review and groups their
failures into signatures; a record that comes after its trace was evaluated is added to it; a name one of the
daemon's own evaluators has is taken as `external.<name>`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess

pytestmark = pytest.mark.integration

EVENT = "gen_ai.evaluation.result"
SERVICE = "capital-agent"
TRACES = 6


class App:
    """An application instrumented with the real SDK: its spans over OTLP/gRPC, its events over OTLP/HTTP."""

    def __init__(self, daemon) -> None:
        resource = Resource.create({"service.name": SERVICE})
        self.tracing = TracerProvider(resource=resource)
        self.tracing.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{daemon.grpc_port}", insecure=True, timeout=5))
        )
        self.logging = LoggerProvider(resource=resource)
        exporter = OTLPLogExporter(endpoint=f"http://127.0.0.1:{daemon.http_port}/v1/logs", timeout=5)
        self.logging.add_log_record_processor(SimpleLogRecordProcessor(exporter))
        self.tracer = self.tracing.get_tracer("capital-agent")
        self.events = self.logging.get_logger("my-evaluation-sdk")

    def answer(self, i: int) -> str:
        """One agent run with an LLM call, evaluated by the app (odd runs fail); its trace id."""
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "capital_agent"}
        with self.tracer.start_as_current_span("invoke_agent capital_agent", attributes=agent) as root:
            call = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gemini-2.0-flash"}
            with self.tracer.start_as_current_span("chat gemini-2.0-flash", attributes=call) as llm:
                good = i % 2 == 0
                self.events.emit(
                    event_name=EVENT,
                    attributes={
                        "gen_ai.evaluation.name": "answer_relevance",
                        "gen_ai.evaluation.score.value": 0.9 if good else 0.2,
                        "gen_ai.evaluation.score.label": "relevant" if good else "irrelevant",
                        "gen_ai.evaluation.explanation": "names the capital" if good else "talks about the weather",
                        "gen_ai.response.id": f"resp-{i}",
                    },
                )
                # the older way: a span event, with a score only (the configured threshold decides)
                llm.add_event(EVENT, {"gen_ai.evaluation.name": "helpfulness", "gen_ai.evaluation.score.value": 0.3})
                # a name the daemon's own evaluator has
                self.events.emit(
                    event_name=EVENT,
                    attributes={"gen_ai.evaluation.name": "no_tool_errors", "gen_ai.evaluation.score.label": "pass"},
                )
        return format(root.get_span_context().trace_id, "032x")

    def late(self, trace_id: str) -> None:
        """An evaluation of an answer whose trace the daemon evaluated already (no span context: by trace id)."""
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

        span = NonRecordingSpan(SpanContext(int(trace_id, 16), 0x1234, is_remote=True, trace_flags=TraceFlags(1)))
        self.events.emit(
            event_name=EVENT,
            context=set_span_in_context(span),
            attributes={"gen_ai.evaluation.name": "user_thumbs", "gen_ai.evaluation.score.label": "fail"},
        )

    def close(self) -> None:
        self.tracing.shutdown()
        self.logging.shutdown()


@pytest.fixture
def app_and_daemon(daemon_factory) -> Iterator[tuple[App, object]]:
    alert = {"min_pass_ratio": 0.9, "window": "5m", "for": "1s", "min_samples": 5}
    daemon = daemon_factory(
        {"external_evaluations": {"thresholds": {"helpfulness": 0.5}, "alerts": {"answer_relevance": alert}}}
    )
    app = App(daemon)
    yield app, daemon
    app.close()


def results(daemon, evaluator: str, **labels: str) -> dict[str, float]:
    """{outcome: count} of `evaluator`'s agent_eval_results_total samples with `labels`."""
    found: dict[str, float] = {}
    for sample, value in daemon.metrics().get("agent_eval_results_total", []):
        if sample["evaluator"] == evaluator and all(sample.get(k) == v for k, v in labels.items()):
            found[sample["outcome"]] = found.get(sample["outcome"], 0.0) + value
    return found


def get_json(daemon, path: str) -> dict:
    status, body, _ = daemon.get(path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def test_an_apps_own_evaluations_are_results_of_external_evaluators(app_and_daemon) -> None:
    app, daemon = app_and_daemon
    traces = [app.answer(i) for i in range(TRACES)]
    daemon.wait_until(
        lambda: daemon.value("agent_monitor_traces_evaluated_total") >= TRACES, "the traces evaluated", timeout=30
    )
    relevance = results(daemon, "answer_relevance", source="external", level="llm", service=SERVICE)
    assert relevance == {"pass": 3.0, "fail": 3.0}, (relevance, daemon.output()[-3000:])
    assert results(daemon, "helpfulness", source="external") == {"fail": 6.0}  # 0.3 under the threshold of 0.5
    assert results(daemon, "external.no_tool_errors", source="external") == {"pass": 6.0}
    # its configured alert: 3 of 6 pass, under 0.9 (the in-process state, as `agent-monitor rules` writes it too)
    firing = lambda: daemon.value("agent_eval_alert_active", evaluator="answer_relevance", service=SERVICE) == 1  # noqa: E731
    daemon.wait_until(firing, "the external evaluator's alert firing", timeout=15)
    assert results(daemon, "no_tool_errors", source="external") == {}  # the daemon's own stays its own
    assert sum(results(daemon, "no_tool_errors", source="daemon").values()) == TRACES

    app.late(traces[0])  # its trace was evaluated: added to it
    daemon.wait_until(lambda: results(daemon, "user_thumbs") == {"fail": 1.0}, "the late result counted")
    assert results(daemon, "user_thumbs", source="external", level="trace", service=SERVICE) == {"fail": 1.0}

    failing = lambda: get_json(daemon, "/api/v1/results?evaluator=answer_relevance&outcome=fail&since=1h")  # noqa: E731
    daemon.wait_until(lambda: len(failing()["items"]) == 3, "the failing results in the review")
    items = failing()["items"]
    assert {item["trace_id"] for item in items} == {traces[i] for i in (1, 3, 5)}
    assert all("talks about the weather" in (item.get("explanation") or "") for item in items), items
    late = get_json(daemon, "/api/v1/results?evaluator=user_thumbs&outcome=fail&since=1h")["items"]
    assert [item["trace_id"] for item in late] == [traces[0]]

    signatures = lambda: {s["evaluator"] for s in get_json(daemon, "/api/v1/signatures?since=1h")["items"]}  # noqa: E731
    daemon.wait_until(lambda: {"answer_relevance", "helpfulness"} <= signatures(), "their failures' signatures")


def test_a_daemon_exporting_to_its_own_receiver_takes_none_of_its_records_back(tmp_path) -> None:
    daemon = DaemonProcess(tmp_path, {"evaluators": [{"name": "error_free"}]}, env=project_env())
    config = yaml.safe_load(daemon.config_path.read_text())
    endpoint = f"http://127.0.0.1:{daemon.grpc_port}"
    config["export"] = {"evaluations": {"enabled": True, "endpoint": endpoint, "results": "all"}}
    config["evaluation"] = {"workers": 1}
    config["assembly"]["quiet_period"] = "3s"  # its records arrive while the traces' ids are still remembered...
    daemon.config_path.write_text(yaml.safe_dump(config))
    with daemon.start():
        app = App(daemon)
        try:
            traces = [app.answer(i) for i in range(2)]
        finally:
            app.close()
        daemon.wait_for("agent_monitor_traces_evaluated_total", 2)
        # ...and the daemon's own records about them come back to its logs receiver: both external ones (the app's)
        # and its own error_free ones would be counted again if they were taken back
        exported = lambda: daemon.value("agent_monitor_evaluation_exports_total", outcome="exported")  # noqa: E731
        daemon.wait_until(lambda: exported() >= 2, "the daemon's own results exported to itself")
        time.sleep(2.0)  # what came back has been ingested
        assert results(daemon, "answer_relevance", source="external") == {"pass": 1.0, "fail": 1.0}
        external = {
            s["evaluator"] for s, _ in daemon.metrics()["agent_eval_results_total"] if s["source"] == "external"
        }
        assert external == {"answer_relevance", "helpfulness", "no_tool_errors"}  # the app's, not external.error_free
        assert daemon.value("agent_monitor_traces_evaluated_total") == len(traces)  # no trace of records alone
