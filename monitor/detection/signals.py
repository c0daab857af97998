"""The signals drift detection watches, by name: what each measures, how it is tested and which way is worse.

Trace signals are one value per stored trace of a (service, agent); evaluator signals one per stored verdict;
conversation signals one per completed conversation of a service (agent ""). `subject` is the evaluator
(`pass_ratio`, `score`), the tool (`tool_share`) or the ending (`conversation_ended`), "" for the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Direction, Scale, SignalKind, Statistic


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    kind: SignalKind
    statistic: Statistic
    scale: Scale
    worse: Direction | None  # the direction that is a regression (quality signals); None: behaviour
    unit: str  # what a value is, for people ("ratio", "chars", "USD", ...)
    description: str


_Q, _B = SignalKind.QUALITY, SignalKind.BEHAVIOUR
_R, _M = Statistic.RATIO, Statistic.MEAN
_UNIT, _MAG = Scale.UNIT, Scale.MAGNITUDE

SIGNALS: dict[str, Signal] = {
    s.name: s
    for s in (
        Signal("pass_ratio", _Q, _R, _UNIT, Direction.DOWN, "ratio", "the share of an evaluator's verdicts that pass"),
        Signal("score", _Q, _M, _UNIT, Direction.DOWN, "score", "an evaluator's mean score"),
        Signal("error_rate", _Q, _R, _UNIT, Direction.UP, "ratio", "the share of traces with a failed span"),
        Signal("tool_success", _Q, _R, _UNIT, Direction.DOWN, "ratio", "the share of tool calls that succeed"),
        Signal("tool_share", _B, _R, _UNIT, None, "ratio", "the share of traces that call a tool"),
        Signal("llm_calls", _B, _M, _MAG, None, "calls", "LLM calls per trace"),
        Signal("tool_calls", _B, _M, _MAG, None, "calls", "tool calls per trace"),
        Signal("response_length", _B, _M, _MAG, None, "chars", "the characters of a trace's answer"),
        Signal("tokens", _B, _M, _MAG, None, "tokens", "LLM tokens per trace (input and output)"),
        Signal("cost", _B, _M, _MAG, None, "USD", "the spend per priced trace"),
        Signal("latency", _B, _M, _MAG, None, "seconds", "a trace's duration"),
        Signal("turns", _B, _M, _MAG, None, "turns", "turns per completed conversation"),
        Signal("conversation_ended", _B, _R, _UNIT, None, "ratio", "the share of conversations ending this way"),
    )
}

TRACE_SIGNALS = (
    "error_rate",
    "tool_success",
    "tool_share",
    "llm_calls",
    "tool_calls",
    "response_length",
    "tokens",
    "cost",
    "latency",
)
RESULT_SIGNALS = ("pass_ratio", "score")
CONVERSATION_SIGNALS = ("turns", "conversation_ended")

__all__ = ["CONVERSATION_SIGNALS", "RESULT_SIGNALS", "SIGNALS", "TRACE_SIGNALS", "Signal"]
