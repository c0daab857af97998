"""Rule-based builtin evaluators of one agent's run: call budget, tool success, loops, efficiency, tool calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluators.sdk import BaseEvaluator, EvalResult, Param, SkipReason, register
from evaluators.signatures import Failure
from evaluators.signatures.span_failures import span_failure
from evaluators.traces.messages import ToolCall, ToolDefinition
from evaluators.traces.model import AgentTrace, LLMSpan

from ..linear_regex import compile_linear
from ._common import (
    DECAY_HELP,
    HANDOFF_TOOL_PATTERNS,
    canonical_arguments,
    decay_score,
    fmt_num,
    is_handoff_tool,
    listing,
    shorten,
)
from ._schema import validate


def _agent_label(agent: AgentTrace) -> str:
    return f"agent {agent.agent_name!r}" if agent.agent_name else "the agent"


def _agent_failure(agent: AgentTrace, error_type: str, message: str) -> Failure:
    return Failure(step_kind="agent", step_name=agent.agent_name, error_type=error_type, message=message)


def _arguments_failure(call: ToolCall, problem: str) -> Failure:
    """A call's first argument problem: not JSON, or a schema violation (its path and rule; values are masked)."""
    if call.arguments_error is not None:
        return Failure("tool", call.name, "invalid_json", "arguments are not valid JSON")
    return Failure("tool", call.name, "schema_violation", _without_value(problem))


# RE2 (linear time): the problem holds the call's argument keys and values, and `: .* is not one of ` retried from
# every ": " of a long key was quadratic in Python's engine
_GOT_VALUE = compile_linear(r", got .*$")
_VALUE_NOT_IN = compile_linear(r": .* is not one of ")


def _without_value(problem: str) -> str:
    """A schema problem without the offending value ("$.to: 'XYZ' is not one of [...]" → "$.to: a value ...")."""
    return _VALUE_NOT_IN.sub(": a value is not one of ", _GOT_VALUE.sub("", problem), count=1)


@register
class LLMCallBudget(BaseEvaluator):
    """The agent's LLM calls: 1 at or below max_llm_calls, decaying above; threshold 1 = within budget."""

    name = "llm_call_budget"
    level = "agent"
    kind = "rule"
    threshold = 1.0
    max_llm_calls = Param(10, "LLM calls one agent may make in a trace", min=1)
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def evaluate(self, agent: AgentTrace) -> EvalResult:
        count = len(agent.llm_steps)
        if count == 0:
            return EvalResult.skip(SkipReason.NO_DATA, f"{_agent_label(agent)} made no LLM calls")
        limit = self.max_llm_calls
        within = count <= limit
        return EvalResult(
            score=decay_score(count, limit, self.decay),
            explanation=f"{_agent_label(agent)} made {count} LLM call(s), {'within' if within else 'over'} "
            f"the budget of {limit}",
            details={"llm_calls": count, "max_llm_calls": limit},
            failure=None if within else _agent_failure(agent, "over_llm_call_budget", "more LLM calls than the budget"),
        )


@register
class ToolSuccessRate(BaseEvaluator):
    """Share of the agent's tool executions that did not fail."""

    name = "tool_success_rate"
    level = "agent"
    kind = "rule"
    threshold = 0.8

    def evaluate(self, agent: AgentTrace) -> EvalResult:
        tools = agent.tool_steps
        if not tools:
            return EvalResult.skip(SkipReason.NO_DATA, f"{_agent_label(agent)} executed no tools")
        failed = [t for t in tools if t.has_error]
        ok = len(tools) - len(failed)
        text = f"{ok}/{len(tools)} tool call(s) succeeded"
        if failed:
            text += "; failed: " + listing([f"{t.name} ({shorten(t.error or 'error', 80)})" for t in failed])
        return EvalResult(
            score=ok / len(tools),
            explanation=text,
            details={"tool_calls": len(tools), "failed": len(failed), "failed_tools": [t.name for t in failed]},
            failure=span_failure(failed[0]) if failed else None,
        )


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    key: str | None  # canonical arguments; None when not recorded (never equal to another call)

    def same_as(self, other: _Call) -> bool:
        return self.name == other.name and self.key is not None and self.key == other.key


def _calls_of(agent: AgentTrace) -> tuple[list[_Call], str]:
    """The agent's tool calls in order: executions, or when none were traced, the calls its LLM requested."""
    if agent.tool_steps:
        return [_Call(t.name, canonical_arguments(t.arguments)) for t in agent.tool_steps], "executed"
    requested = [c for step in agent.llm_steps for c in step.tool_calls if not is_handoff_tool(c.name)]
    return [_Call(c.name, canonical_arguments(c.arguments)) for c in requested], "requested"


def _longest_repeat(calls: list[_Call]) -> tuple[int, int]:
    """(start, length) of the longest run of identical consecutive calls."""
    best, best_start, run, start = 0, 0, 0, 0
    for index, call in enumerate(calls):
        if index and call.same_as(calls[index - 1]):
            run += 1
        else:
            run, start = 1, index
        if run > best:
            best, best_start = run, start
    return best_start, best


def _repeats(calls: list[_Call], start: int, period: int) -> int:
    """How many times the block calls[start:start+period] occurs back to back from `start`."""
    repeats = 1
    while start + (repeats + 1) * period <= len(calls) and all(
        calls[start + repeats * period + i].same_as(calls[start + i]) for i in range(period)
    ):
        repeats += 1
    return repeats


def _find_cycle(calls: list[_Call], max_period: int, min_cycles: int) -> tuple[int, int, int] | None:
    """(start, period, repeats) of a block of 2+ calls repeated back to back at least `min_cycles` times."""
    for period in range(2, max_period + 1):
        for start in range(len(calls) - period * min_cycles + 1):
            block = calls[start : start + period]
            if all(c.same_as(block[0]) for c in block):
                continue  # one call repeated: that is a repeat, not a cycle
            repeats = _repeats(calls, start, period)
            if repeats >= min_cycles:
                return start, period, repeats
    return None


@register
class LoopDetection(BaseEvaluator):
    """0 when the agent loops: the same tool call (same arguments) repeated, or a cycle of calls repeated."""

    name = "loop_detection"
    level = "agent"
    kind = "rule"
    max_repeats = Param(3, "identical consecutive tool calls (same tool and arguments) that count as a loop", min=2)
    max_cycles = Param(2, "back-to-back repeats of a multi-call cycle (A-B-A-B...) that count as a loop", min=2)
    max_cycle_length = Param(3, "longest cycle (in calls) looked for; 1 turns cycle detection off", min=1, max=10)

    def evaluate(self, agent: AgentTrace) -> EvalResult:
        calls, source = _calls_of(agent)
        if not calls:
            return EvalResult.skip(SkipReason.NO_DATA, f"{_agent_label(agent)} made no tool calls")
        start, run = _longest_repeat(calls)
        if run >= self.max_repeats:
            name = calls[start].name
            return EvalResult(
                0.0,
                explanation=f"loop: {name} called {run} times in a row with the same arguments "
                f"(a loop from {self.max_repeats}) by {_agent_label(agent)}",
                details={"loop": "repeat", "tool": name, "count": run, "source": source},
                failure=Failure("tool", name, "loop", "the same call repeated with the same arguments"),
            )
        cycle = _find_cycle(calls, self.max_cycle_length, self.max_cycles)
        if cycle is not None:
            start, period, repeats = cycle
            names = [c.name for c in calls[start : start + period]]
            return EvalResult(
                0.0,
                explanation=f"loop: the cycle {' → '.join(names)} repeated {repeats} times with the same arguments "
                f"by {_agent_label(agent)}",
                details={"loop": "cycle", "tools": names, "count": repeats, "source": source},
                failure=Failure("tool", " → ".join(names), "loop_cycle", "a cycle of calls repeated"),
            )
        return EvalResult(
            1.0,
            explanation=f"no loop in {len(calls)} {source} tool call(s) (longest identical run: {run})",
            details={"tool_calls": len(calls), "longest_run": run, "source": source},
        )


@register
class AgentEfficiency(BaseEvaluator):
    """LLM calls per tool call: 1 at or below max_llm_per_tool, decaying above; threshold 1 = within the limit."""

    name = "agent_efficiency"
    level = "agent"
    kind = "rule"
    threshold = 1.0
    max_llm_per_tool = Param(2.0, "LLM calls allowed per tool call (with no tool calls, per 1)", min=0.1)
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def evaluate(self, agent: AgentTrace) -> EvalResult:
        llm, tools = len(agent.llm_steps), len(agent.tool_steps)
        if llm == 0:
            return EvalResult.skip(SkipReason.NO_DATA, f"{_agent_label(agent)} made no LLM calls")
        ratio = llm / max(tools, 1)
        limit = self.max_llm_per_tool
        within = ratio <= limit
        return EvalResult(
            score=decay_score(ratio, limit, self.decay),
            explanation=f"{llm} LLM call(s) for {tools} tool call(s): {ratio:.2f} per tool, "
            f"{'within' if within else 'over'} the limit of {fmt_num(limit)}",
            details={"llm_calls": llm, "tool_calls": tools, "llm_per_tool": ratio},
            failure=None if within else _agent_failure(agent, "inefficient", "too many LLM calls per tool call"),
        )


def _tools_for(step: LLMSpan, agent: AgentTrace) -> list[ToolDefinition]:
    """The tools offered to one LLM call; the agent's tools when the call's were not recorded."""
    return step.available_tools or agent.available_tools


@register
class HallucinatedTool(BaseEvaluator):
    """Share of requested tool calls naming a tool the model was offered (0 misses → 1); handoffs are ignored."""

    name = "hallucinated_tool"
    level = "agent"
    kind = "rule"
    threshold = 1.0
    ignore_tools = Param(
        list(HANDOFF_TOOL_PATTERNS), "tool names (glob patterns) never checked, e.g. handoff pseudo-tools", type=list
    )

    def evaluate(self, agent: AgentTrace) -> EvalResult:
        ignored = [p for p in self.ignore_tools if isinstance(p, str)]
        checked, unknown = 0, []
        any_definitions = False
        for step in agent.llm_steps:
            known = {t.name for t in _tools_for(step, agent)}
            any_definitions = any_definitions or bool(known)
            for call in step.tool_calls:
                if not known or is_handoff_tool(call.name, ignored):
                    continue
                checked += 1
                if call.name not in known:
                    unknown.append(call.name or "<unnamed>")
        if not any_definitions:
            return EvalResult.skip(SkipReason.NO_DATA, f"no tool definitions recorded for {_agent_label(agent)}")
        if checked == 0:
            return EvalResult.skip(SkipReason.NO_DATA, f"{_agent_label(agent)} requested no (non-handoff) tool calls")
        if unknown:
            text = f"{len(unknown)}/{checked} tool call(s) name unknown tools: {listing(sorted(set(unknown)), 5, ', ')}"
        else:
            text = f"all {checked} requested tool call(s) name offered tools"
        return EvalResult(
            score=(checked - len(unknown)) / checked,
            explanation=text,
            details={"checked": checked, "unknown_tools": sorted(set(unknown))},
            failure=Failure("tool", min(unknown), "unknown_tool", "a call names a tool that was not offered")
            if unknown
            else None,
        )


def _call_problems(call: ToolCall, schema: dict[str, Any]) -> list[str]:
    if call.arguments_error is not None:
        return [f"arguments are not valid JSON ({shorten(call.arguments_error, 80)})"]
    arguments = {} if call.arguments is None else call.arguments
    return validate(arguments, schema)


@register
class ToolArgumentsValid(BaseEvaluator):
    """Share of requested tool calls whose arguments are valid JSON matching the tool's declared JSON schema."""

    name = "tool_arguments_valid"
    level = "agent"
    kind = "rule"
    threshold = 1.0
    max_listed = Param(3, "how many problems the explanation lists", min=1, max=50)

    def evaluate(self, agent: AgentTrace) -> EvalResult:
        checked, invalid = 0, 0
        problems: list[str] = []
        first: Failure | None = None
        # the schemas executed tools declare on their own spans, for calls whose offered tools were not recorded
        declared = {t.name: t.parameters for t in agent.tool_steps if isinstance(t.parameters, dict)}
        for step in agent.llm_steps:
            offered = {t.name: t.parameters for t in _tools_for(step, agent) if isinstance(t.parameters, dict)}
            schemas = {**declared, **offered}
            for call in step.tool_calls:
                schema = schemas.get(call.name)
                if not schema:
                    continue
                checked += 1
                found = _call_problems(call, schema)
                if found:
                    invalid += 1
                    first = first or _arguments_failure(call, found[0])
                    problems.extend(f"{call.name}: {shorten(p, 120)}" for p in found[:3])
        if checked == 0:
            return EvalResult.skip(SkipReason.NO_DATA, f"no tool call of {_agent_label(agent)} has a declared schema")
        valid = checked - invalid
        text = f"{valid}/{checked} tool call(s) have valid arguments"
        if problems:
            text += "; " + listing(problems, self.max_listed)
        return EvalResult(
            score=valid / checked,
            explanation=text,
            details={"checked": checked, "invalid": invalid, "problems": problems[:20]},
            failure=first,
        )
