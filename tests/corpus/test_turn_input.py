"""Every turn of a recorded multi-turn conversation reads its own question as its input (not turn 1's, which
frameworks that resend the history put first): in `inspect --json` (with the rule that chose it), in the
conversation's turns, in `dataset export` and `evaluate --dataset` matching, and in a judge's prompt."""

from __future__ import annotations

import io
import json
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from evaluators import builtin
from evaluators.judges import JudgeRequest, LLMJudge, prepare
from evaluators.sdk import Dataset
from evaluators.sessions import group_sessions
from evaluators.traces.turn_input import InputSource
from monitor.cli import main
from monitor.commands import inspect_cmd
from monitor.offline.evaluation import match_tasks
from tests.corpus.multi_turn import (
    MULTI_TURN_SCENARIOS,
    assert_own_question,
    scenario_dir,
    scenario_traces,
    store_turns,
    turn_facts,
)
from tests.support.promptcheck import blocks

SOURCES = {str(s) for s in InputSource}


def inspect_views(scenario: str) -> dict[str, dict[str, Any]]:
    out = io.StringIO()
    assert inspect_cmd.run(Namespace(paths=[str(scenario_dir(scenario))], json=True, width=80), out) == 0
    return {view["trace_id"]: view for view in json.loads(out.getvalue())}


@pytest.mark.parametrize("scenario", MULTI_TURN_SCENARIOS)
def test_inspect_json_gives_each_turn_its_own_question_and_the_rule(scenario: str) -> None:
    views = inspect_views(scenario)
    for fact in turn_facts(scenario):
        view = views[fact.trace_id]
        assert_own_question(view["input"], fact)
        assert view["input_source"] in SOURCES
        for agent in view["agent_traces"]:
            if agent["input"] is not None:
                assert_own_question(agent["input"], fact)
                assert agent["input_source"] in SOURCES


def test_a_history_without_a_carrier_is_read_from_its_latest_user_message() -> None:
    """The OpenAI Agents SDK records no input on its workflow and agent spans: turn 1 reads the request's only user
    message, turns 2 and 3 the latest of the resent conversation, and each says so."""
    views = inspect_views("oi_openai_agents__multi_turn")
    sources = {f.turn: views[f.trace_id]["input_source"] for f in turn_facts("oi_openai_agents__multi_turn")}
    assert sources == {
        1: "user message of the first LLM request",
        2: "latest user message of the first LLM request",
        3: "latest user message of the first LLM request",
    }


def test_a_root_recording_this_turn_is_the_rule_that_chose_it() -> None:
    """LangGraph with a checkpointer: the root's input.value holds only this turn's question, the model request the
    whole conversation."""
    views = inspect_views("oi_langchain__multi_turn")
    for fact in turn_facts("oi_langchain__multi_turn"):
        assert views[fact.trace_id]["input_source"] == "root span input"
        [agent] = views[fact.trace_id]["agent_traces"]
        assert agent["input_source"] == "agent span input"


@pytest.mark.parametrize("scenario", MULTI_TURN_SCENARIOS)
def test_a_conversations_turns_read_the_traces_input(scenario: str) -> None:
    """One rule: a session's turn message is its trace's input."""
    traces = scenario_traces(scenario)
    facts = {f.trace_id: f for f in turn_facts(scenario)}
    turns = [turn for session in group_sessions(list(traces.values())) for turn in session.turns]
    assert sorted(t.trace_id for t in turns) == sorted(facts)
    for turn in turns:
        assert turn.user_message == traces[turn.trace_id].input
        assert_own_question(turn.user_message, facts[turn.trace_id])


# --- dataset export and evaluate --dataset ----------------------------------------------------------


@pytest.mark.parametrize("scenario", MULTI_TURN_SCENARIOS)
def test_dataset_export_and_evaluate_matching_use_each_turns_question(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = store_turns(scenario, tmp_path / "results.db")
    output = tmp_path / "tasks.json"
    assert main(["dataset", "export", "--store", str(tmp_path / "results.db"), "-o", str(output)]) == 0
    capsys.readouterr()
    tasks = {t["task_id"]: t for t in json.loads(output.read_text(encoding="utf-8"))["tasks"]}
    facts = turn_facts(scenario)
    assert sorted(tasks) == sorted(f.trace_id for f in facts)
    for fact in facts:
        assert_own_question(tasks[fact.trace_id]["input"], fact)
    # the next run of the same conversation: each turn matches its own task by its input text
    ordered = [traces[f.trace_id] for f in facts]
    matched, counts, _ = match_tasks(ordered, Dataset.from_json(output))
    assert counts["input"] == len(facts)
    assert [task.task_id if task else None for task in matched] == [f.trace_id for f in facts]


# --- judges ----------------------------------------------------------------------------------------


def judge(name: str) -> LLMJudge:
    made = builtin(name)
    assert isinstance(made, LLMJudge)
    return made


@pytest.mark.parametrize("scenario", MULTI_TURN_SCENARIOS)
@pytest.mark.parametrize("name", ["hallucination", "answer_relevance", "helpfulness"])
def test_a_judges_user_request_block_is_the_turns_question(scenario: str, name: str) -> None:
    traces = scenario_traces(scenario)
    for fact in turn_facts(scenario):
        [one] = prepare(traces[fact.trace_id], [judge(name)], mode="monitor")
        assert isinstance(one.request, JudgeRequest), one.result
        assert_own_question(blocks(one.request.prompt)["user_request"], fact)


@pytest.mark.parametrize("scenario", MULTI_TURN_SCENARIOS)
def test_an_agent_judges_agent_input_block_is_the_turns_question(scenario: str) -> None:
    traces = scenario_traces(scenario)
    asked = 0
    for fact in turn_facts(scenario):
        for one in prepare(traces[fact.trace_id], [judge("reasoning_quality")], mode="monitor"):
            if isinstance(one.request, JudgeRequest):
                asked += 1
                assert_own_question(blocks(one.request.prompt)["agent_input"], fact)
    assert asked, "no agent judge prompt"


def test_inspects_tree_says_which_rule_chose_the_input() -> None:
    out = io.StringIO()
    path = str(scenario_dir("oi_openai_agents__multi_turn"))
    assert inspect_cmd.run(Namespace(paths=[path], json=False, width=200), out) == 0
    text = out.getvalue()
    for fact in turn_facts("oi_openai_agents__multi_turn"):
        header = text[text.index(f"trace {fact.trace_id}") :].splitlines()[1:3]
        assert header[0] == f"  input:  {fact.question}"
        rule = "latest user message" if fact.turn > 1 else "user message"
        assert header[1] == f"  input from: {rule} of the first LLM request"
