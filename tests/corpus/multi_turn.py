"""The recorded multi-turn conversations whose later turns resend the history, and each turn's own question.

Extend MULTI_TURN_SCENARIOS with every recorded conversation whose turns 2+ resend the earlier turns (e.g. an ADK
2.x or an opentelemetry-instrumentation-openai-v2 multi-turn scenario): its expected.json gives per trace
`input_contains` (that turn's question), `session_id` and `turn`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evaluators.sdk import EvalResult, evaluator
from evaluators.traces import Trace, load_traces
from monitor.engine.configured import ConfiguredEvaluator
from tests.conftest import CORPUS
from tests.support.metrics_port import store_evaluated

MULTI_TURN_SCENARIOS = [
    "pydantic_ai__session_chat",  # Pydantic AI message_history
    "oi_openai__session_support",  # OpenInference on the OpenAI client, the app resends the messages
    "otel_genai__session_interleaved",  # OTel google-genai, two conversations interleaved
    "oi_openai_agents__multi_turn",  # OpenAI Agents SDK, to_input_list() + the new question
    "oi_langchain__multi_turn",  # LangGraph create_agent with a checkpointer and thread_id
    "adk_native__events_multi_turn",  # Google ADK 2.13 schema 2, content only in log events, a handoff
    "adk_native__events_multi_turn_legacy",  # the same run, ADK schema 1 (legacy) log records
    "otel_openai_v2__multi_turn",  # OTel openai-v2 + util-genai invoke_agent, gen_ai.conversation.id
]


@dataclass(frozen=True)
class TurnFact:
    """One turn of a recorded conversation, from its expected.json."""

    trace_id: str
    session_id: str
    turn: int
    question: str  # this turn's own question (input_contains)
    first_question: str  # turn 1's question of the same conversation


def turn_facts(scenario: str) -> list[TurnFact]:
    traces = json.loads((CORPUS / scenario / "expected.json").read_text(encoding="utf-8"))["traces"]
    first = {t["session_id"]: t["input_contains"] for t in traces if t["turn"] == 1}
    facts = [
        TurnFact(t["trace_id"], t["session_id"], t["turn"], t["input_contains"], first[t["session_id"]]) for t in traces
    ]
    assert any(f.turn > 1 for f in facts), f"{scenario}: no later turn"
    return facts


def scenario_traces(scenario: str) -> dict[str, Trace]:
    return {t.trace_id: t for t in load_traces([CORPUS / scenario])}


def scenario_dir(scenario: str) -> Path:
    return CORPUS / scenario


def assert_own_question(text: str | None, fact: TurnFact) -> None:
    """`text` holds this turn's question and, on a later turn, not turn 1's."""
    assert text is not None and fact.question in text, (fact.trace_id, fact.turn, text)
    if fact.turn > 1 and fact.first_question not in fact.question:
        assert fact.first_question not in text, (fact.trace_id, fact.turn, text)


PROBE = "turn_input_probe"


@evaluator(PROBE)
def turn_input_probe(trace: Trace) -> EvalResult:
    """Fails every trace, so that each turn is a failing result (listed with its input excerpt, exported by
    `dataset export`)."""
    return EvalResult(0.0, explanation="a stand-in failure")


def store_turns(scenario: str, path: Path) -> dict[str, Trace]:
    """The scenario's traces evaluated as the daemon does (by the probe) and written to a SQLite store at `path`."""
    traces = scenario_traces(scenario)
    store_evaluated(path, traces.values(), [ConfiguredEvaluator(turn_input_probe, PROBE)], results="all")
    return traces
