"""Issue 25, "done when": recorded traces of five libraries with the same injected tool failure (`convert_currency`
raising `RuntimeError("FX rate service unavailable (HTTP 503)")`) group into one signature per (evaluator, tool,
error), through the offline path `agent-monitor evaluate` uses (the default evaluators, `evaluate_offline`).

The libraries record the error differently (tests/fixtures/corpus/*__tool_error/README.md):
- OpenInference + OpenAI, OpenLLMetry: an `exception` event (`RuntimeError`, the message);
- the OTel google-genai instrumentation: `error.type=RuntimeError` and the message as the status message;
- Google ADK native, and OpenInference on ADK: only `error.type=TOOL_ERROR`, the error in the tool's result
  (`{"error": "RuntimeError: FX rate service unavailable (HTTP 503)"}`).
The builtins read all of them into one Failure (tool `convert_currency`, `http_503`, the message without its type).

`tool_success_rate` is an agent-level evaluator and the agent is part of its signature: the scenarios' agents
are `currency_agent` (ADK), `assistant_agent` (OpenAI loops) and none (google-genai's automatic function
calling), so it groups per agent; its stated failure is the same in all five.
"""

from __future__ import annotations

from collections import defaultdict

from evaluators import builtin, load_traces, run_evaluators
from evaluators.sdk import EvaluationRecord, default_builtins
from evaluators.signatures import Failure, FailureSignature, failure_signature
from monitor.offline.evaluation import evaluate_offline
from monitor.offline.spec import selection_and_judges
from tests.conftest import CORPUS

LIBRARIES = ("adk_native", "oi_adk", "oi_openai", "otel_genai", "tl_openai")
TOOL_FAILURE = Failure("tool", "convert_currency", "http_503", "FX rate service unavailable (HTTP 503)")


def failing_records(library: str) -> list[EvaluationRecord]:
    """The failing records of the default evaluators (the SDK's runner) on `library`'s tool_error trace."""
    traces = load_traces(CORPUS / f"{library}__tool_error")
    assert len(traces) == 1, library
    evaluators = [builtin(info.name) for info in default_builtins()]
    return [r for r in run_evaluators(traces[0], evaluators) if r.passed is False]


def signature(record: EvaluationRecord) -> FailureSignature:
    return failure_signature(record.evaluator, record.level, record.agent_name, record.failure, record.explanation)


def test_the_same_tool_failure_in_five_libraries_is_one_signature_per_evaluator_tool_and_error() -> None:
    by_key: dict[tuple[str, str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    agents: dict[str, str | None] = {}
    for library in LIBRARIES:
        records = failing_records(library)
        assert {r.evaluator for r in records} >= {"error_free", "tool_success_rate"}, library
        for record in records:
            sig = signature(record)
            by_key[(sig.evaluator, sig.step_name, sig.error_type)][library].add(sig.id)
            if record.evaluator in ("error_free", "tool_success_rate"):
                assert record.failure == TOOL_FAILURE, (library, record.evaluator, record.failure)
            if record.evaluator == "tool_success_rate":
                agents[library] = record.agent_name
    # trace-level evaluators: one id across all five libraries
    for key in [("error_free", "convert_currency", "http_503"), ("refusal", "", "refusal")]:
        libraries = by_key[key]
        assert set(libraries) == set(LIBRARIES), key
        ids = set().union(*libraries.values())
        assert len(ids) == 1, (key, dict(libraries))
    # the agent-level one: one id per agent, and the libraries sharing an agent name share it
    per_agent: dict[str | None, set[str]] = defaultdict(set)
    for library, ids in by_key[("tool_success_rate", "convert_currency", "http_503")].items():
        per_agent[agents[library]] |= ids
    assert set(per_agent) == {"currency_agent", "assistant_agent", None}
    assert all(len(ids) == 1 for ids in per_agent.values()), dict(per_agent)
    # and with one agent name, the five records are one signature
    same_agent = {
        failure_signature("tool_success_rate", "agent", "currency_agent", r.failure, r.explanation).id
        for library in LIBRARIES
        for r in failing_records(library)
        if r.evaluator == "tool_success_rate"
    }
    assert len(same_agent) == 1


def test_other_evaluators_tools_and_errors_get_other_ids() -> None:
    records = failing_records("oi_openai")
    error_free = next(signature(r) for r in records if r.evaluator == "error_free")
    ids = {signature(r).id for r in records}
    assert len(ids) == len(records) == len({r.evaluator for r in records})  # one id per evaluator
    other_tool = failure_signature(
        "error_free", "trace", None, Failure("tool", "get_rates", "http_503", TOOL_FAILURE.message), ""
    )
    other_error = failure_signature(
        "error_free", "trace", None, Failure("tool", "convert_currency", "http_429", TOOL_FAILURE.message), ""
    )
    assert len({error_free.id, other_tool.id, other_error.id}) == 3


def test_evaluate_groups_the_five_libraries_failures_by_signature() -> None:
    """`agent-monitor evaluate`'s path over the five traces at once: its report's signatures."""
    traces = [t for library in LIBRARIES for t in load_traces(CORPUS / f"{library}__tool_error")]
    selection, _ = selection_and_judges(None)
    report = evaluate_offline(traces, selection, worst=0)
    groups = {(g.signature.evaluator, g.signature.agent): g for g in report.signatures}
    error_free = groups[("error_free", "")]
    assert error_free.count == 5 and len(error_free.traces) == 5
    assert (error_free.signature.step_name, error_free.signature.error_type) == ("convert_currency", "http_503")
    assert error_free.signature.template == "FX rate service unavailable (HTTP <num>)"
    assert groups[("refusal", "")].count == 5
    assert {
        agent: groups[("tool_success_rate", agent)].count for agent in ("currency_agent", "assistant_agent", "")
    } == {
        "currency_agent": 2,
        "assistant_agent": 2,
        "": 1,
    }
    assert [g.count for g in report.signatures] == sorted((g.count for g in report.signatures), reverse=True)
