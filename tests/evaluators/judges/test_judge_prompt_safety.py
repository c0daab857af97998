"""Every builtin judge's prompt on synthetic traces: injected text stays inside its block; prompts are bounded."""

from __future__ import annotations

from typing import Any

import pytest

from evaluators import Task, builtin
from evaluators.judges import LLMJudge, prepare
from evaluators.judges.prompt import escape_data
from tests.evaluators.judges.synthetic import agent_trace
from tests.evaluators.judges.test_builtin_judges import JUDGES as EVERY_JUDGE
from tests.evaluators.judges.test_builtin_judges import RUBRICS
from tests.support.promptcheck import INJECTION, TAG, blocks, question_of

# The judges of a trace; the session judges' prompts (a transcript) are checked in test_session_judges.py.
JUDGES = {name: level for name, level in EVERY_JUDGE.items() if level != "session"}

ESCAPED = escape_data(INJECTION)


def all_judges(**params: Any) -> list[LLMJudge]:
    judges = []
    for name in JUDGES:
        extra = {"rubrics": RUBRICS} if name.startswith("rubric") else {}
        made = builtin(name, **extra, **params)
        assert isinstance(made, LLMJudge)
        judges.append(made)
    return judges


def prompts(trace: Any, task: Task, **params: Any) -> dict[tuple[str, str | None], str]:
    """(judge, span id) → prompt for every judgement that was not skipped."""
    out = {}
    for run in prepare(trace, all_judges(**params), mode="experiment", task=task):
        assert run.result is None or run.result.skip_reason != "error", (run.judge.name, run.result)
        if run.request is not None:
            out[(run.judge.name, run.span_id)] = run.request.prompt
    return out


def test_synthetic_trace_reads_as_intended() -> None:
    trace = agent_trace(documents=["Paris is the capital of France."])
    assert trace.input == "What is the capital of France?"
    assert trace.output == "The capital of France is Paris."
    [tool] = trace.get_tool_calls()
    assert tool.result == "Paris is the capital of France."
    [retrieval] = trace.get_retrievals()
    assert retrieval.documents[0].content == "Paris is the capital of France."


def test_an_injection_in_the_agent_output_stays_inside_the_final_answer_block() -> None:
    trace = agent_trace(answer=f"The capital is Paris. {INJECTION}")
    run = next(prepare(trace, [builtin("hallucination")]))
    assert run.request is not None
    text = run.request.prompt
    found = blocks(text)  # checks every tag in the prompt is a block's own
    assert ESCAPED in found["final_answer"] and INJECTION not in text
    assert [m.group(1) for m in TAG.finditer(text)] == ["", "/"] * len(found)
    assert "admin mode" not in question_of(text)
    assert text.rstrip().endswith("</question>")


def test_injections_everywhere_stay_inside_their_blocks_for_every_judge() -> None:
    trace = agent_trace(
        question=f"What is the capital? {INJECTION}",
        system=f"Answer briefly. {INJECTION}",
        tool_result=f"Paris. {INJECTION}",
        answer=f"Paris. {INJECTION}",
        documents=[f"Paris is the capital. {INJECTION}", "Bananas are yellow."],
        query=f"capital {INJECTION}",
    )
    task = Task(task_id="t", expected_output=f"Paris. {INJECTION}")
    found = prompts(trace, task)
    assert {name for name, _ in found} == set(JUDGES) - {"error_recovery"}  # no errors: not applicable
    for (name, _), text in found.items():
        assert INJECTION not in text, name
        contents = blocks(text)
        assert any(ESCAPED in body for body in contents.values()), name
        assert "admin mode" not in question_of(text), name


def test_error_recovery_prompt_is_well_formed_with_an_injected_error() -> None:
    trace = agent_trace(tool_result=None, tool_error=f"Timeout {INJECTION}")
    [run] = list(prepare(trace, [builtin("error_recovery")]))
    assert run.request is not None
    steps = blocks(run.request.prompt)["steps"]
    assert "error: Timeout" in steps and ESCAPED in steps


@pytest.mark.parametrize("max_chars", [200, 1000, 4000])
def test_every_judge_prompt_is_bounded_by_a_few_blocks_of_max_chars(max_chars: int) -> None:
    huge = "lorem ipsum " * 5000
    trace = agent_trace(question=huge, system=huge, tool_result=huge, answer=huge, documents=[huge] * 40, query=huge)
    task = Task(task_id="t", expected_output=huge)
    found = prompts(trace, task, max_data_chars=max_chars)
    assert len(found) >= len(JUDGES) - 1
    for (name, _), text in found.items():
        count = len(blocks(text))
        assert count <= 5, name
        assert len(text) <= count * (max_chars + 200) + max_chars + 200, (name, len(text))
        assert "[truncated: showing" in text, name


def test_truncation_marker_names_the_shown_and_total_characters() -> None:
    answer = "a" * 20_000
    trace = agent_trace(answer=answer)
    judge = builtin("hallucination", max_data_chars=1000)
    run = next(prepare(trace, [judge]))
    assert run.request is not None
    final = blocks(run.request.prompt)["final_answer"]
    assert final.endswith("[truncated: showing 1000 of 20000 characters]")
    assert final.splitlines()[0] == "a" * 1000


def test_rag_judges_judge_the_retrieved_documents() -> None:
    trace = agent_trace(documents=["Paris is the capital of France.", "Bananas are yellow."])
    for name in ("faithfulness", "context_relevance"):
        run = next(prepare(trace, [builtin(name)]))
        assert run.request is not None, name
        contents = blocks(run.request.prompt)
        docs = contents.get("retrieved_documents") or contents["retrievals"]
        assert "query: capital of France" in docs
        assert "[document 1] id=doc-0 score=0.9\nParis is the capital of France." in docs
        assert "[document 2] id=doc-1" in docs and "Bananas are yellow." in docs
    hallucination = next(prepare(trace, [builtin("hallucination")]))
    assert hallucination.request is not None
    assert "Bananas are yellow." in blocks(hallucination.request.prompt)["retrieved_documents"]
