"""docs/evaluators.md's table of which default evaluators score on which library is what the corpus gives.

The default evaluator set's trace, agent and llm evaluators (from the code) run over every recorded scenario; per
library family, an evaluator that produced no score on any of the family's traces is listed with the reason it
skipped (session-level evaluators judge conversations, not traces: left out). Print the table with
`PYTHONPATH=. python -m tests.corpus.test_applicability` after adding a scenario or changing an evaluator.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from evaluators import EvaluationRecord, builtin, load_traces, run_evaluators
from evaluators.sdk import default_builtins
from tests.conftest import corpus_scenarios

DOC = Path(__file__).resolve().parents[2] / "docs" / "evaluators.md"
HEADER = "| library (instrumentation) | corpus scenarios | scores | no score on any recorded trace: why |"

# (label in the docs, scenario-name pattern); every scenario belongs to exactly one family
FAMILIES = [
    ("OpenAI client + OpenInference", r"oi_openai__"),
    ("OpenAI Agents SDK, Responses API + OpenInference", r"oi_openai_agents__(?!chatcmpl_)"),
    (
        "OpenAI Agents SDK, Chat Completions (`OpenAIChatCompletionsModel`) + OpenInference",
        r"oi_openai_agents__chatcmpl_",
    ),
    ("OpenAI client + OpenLLMetry (Traceloop)", r"tl_openai__"),
    ("OpenLIT (OpenAI and Anthropic clients)", r"openlit__"),
    ("Anthropic client + OpenInference", r"oi_anthropic__"),
    ("Anthropic client + OpenLLMetry (Traceloop), bare instrumentor", r"tl_anthropic__"),
    ("google-genai + OpenTelemetry GenAI instrumentation", r"otel_genai__"),
    ("Google ADK 1.x, native tracing", r"adk1_native__"),
    ("Google ADK 2.x, native tracing", r"adk_native__"),
    ("Google ADK + OpenInference", r"oi_adk__"),
    ("LangChain / LangGraph + OpenInference", r"oi_langchain__"),
    ("LlamaIndex + OpenInference", r"oi_llamaindex__"),
    ("smolagents + OpenInference", r"oi_smolagents__"),
    ("Pydantic AI, built-in instrumentation", r"pydantic_ai__"),
    ("Strands Agents, native tracing", r"strands__"),
    ("Vercel AI SDK (Node), `experimental_telemetry`", r"vercel_ai__"),
    ("Node.js, GenAI semconv spans written by hand", r"node_grpc__"),
    ("Semantic Kernel, native OTel diagnostics (content in log records)", r"semantic_kernel__"),
    ("OpenAI client + OpenTelemetry openai-v2 instrumentation, util-genai agent spans", r"otel_openai_v2__"),
    ("CrewAI + OpenInference (crewai, openai)", r"oi_crewai__"),
    ("AutoGen AgentChat, native tracing + OpenLLMetry (OpenAI client)", r"autogen_native__"),
    ("AutoGen AgentChat + OpenInference (beside the native spans)", r"oi_autogen__"),
]


def family_of(scenario: str) -> str:
    labels = [label for label, pattern in FAMILIES if re.match(pattern, scenario)]
    assert len(labels) == 1, f"{scenario}: families {labels}; add it to FAMILIES"
    return labels[0]


def _reason(record: EvaluationRecord) -> str:
    """The skip explanation without the agent's name, so the agents' skips read alike."""
    text = re.sub(r"agent '[^']*'", "the agent", record.explanation or record.skip_reason or "skipped")
    return f"{record.skip_reason}: {text}"


def compute_rows() -> list[str]:
    names = [info.name for info in default_builtins() if info.level != "session"]  # conversations: not one trace
    evaluators = [builtin(name) for name in names]
    scenarios: dict[str, list[str]] = defaultdict(list)
    records: dict[str, dict[str, list[EvaluationRecord]]] = defaultdict(lambda: defaultdict(list))
    for path in corpus_scenarios():
        family = family_of(path.name)
        scenarios[family].append(path.name.split("__", 1)[1])
        for trace in load_traces(path):
            for record in run_evaluators(trace, evaluators):
                records[family][record.evaluator].append(record)
    rows = [HEADER, "|---|---|---|---|"]
    for label, _ in FAMILIES:
        never = []
        for name in names:
            got = records[label][name]
            if not any(r.scored for r in got):
                why = sorted({_reason(r) for r in got}) or ["no result"]
                never.append(f"`{name}` ({'; '.join(why)})")
        scored = len(names) - len(never)
        rows.append(
            f"| {label} | {', '.join(scenarios[label])} | {scored} of {len(names)} | {'<br>'.join(never) or '–'} |"
        )
    return rows


def documented_rows() -> list[str]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert HEADER in lines, f"docs/evaluators.md has no table headed {HEADER!r}"
    start = lines.index(HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[start:end]


def test_every_family_has_scenarios() -> None:
    found = {family_of(p.name) for p in corpus_scenarios()}
    assert found == {label for label, _ in FAMILIES}


def test_docs_table_matches_the_corpus() -> None:
    expected = compute_rows()
    assert documented_rows() == expected, "docs/evaluators.md is stale; the table should read:\n" + "\n".join(expected)


def test_chat_completions_agents_skip_what_their_spans_do_not_record() -> None:
    """The row users of the Agents SDK's Chat Completions model look for (issue 23, item 13)."""
    [row] = [r for r in documented_rows() if r.startswith("| OpenAI Agents SDK, Chat Completions")]
    assert "`finish_reason` (no_data: no finish reason recorded)" in row
    assert "`hallucinated_tool` (no_data: no tool definitions recorded for the agent)" in row
    assert "tool_arguments_valid" not in row


if __name__ == "__main__":
    print("\n".join(compute_rows()))
