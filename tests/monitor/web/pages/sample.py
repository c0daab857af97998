"""Realistic review data: a failing checkout trace (agent → LLM → failing tool, an output that tries XSS),
a passing research trace, a page's worth of older latency failures, and the evaluators as the daemon lists them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from monitor.review.models import (
    ErrorSpan,
    EvaluatorStatus,
    EvaluatorWindow,
    ModelUsage,
    ResultItem,
    Step,
    TraceDetail,
    TraceSummary,
)

NOW = float(int(time.time()))  # the data is recent: "since=1h" finds the failing trace
XSS = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
FAILING_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PASSING_TRACE = "0af7651916cd43dd8448eb211c80319c"
TOOL_ERROR = "timeout after 30s: order database unreachable"
EXPLANATION = "1 of 2 tool calls failed: lookup_order (timeout after 30s: order database unreachable)"


@dataclass(frozen=True)
class Facts:
    """What the data holds, for tests to assert (a daemon-fed variant supplies its own)."""

    failing_trace: str
    evaluator: str  # fails on failing_trace
    explanation: str  # of that failure
    step_names: tuple[str, ...]  # of failing_trace, depth-first
    error_step: str  # the failing step's name
    other_evaluators: tuple[str, ...] = field(default=())
    payload: str = XSS  # text in the failing trace's output
    step_depths: tuple[int, ...] | None = None  # of the steps, when the tree is not a plain chain


def _result(trace: str, evaluator: str, outcome: str, score: float | None, at: float, **kw: object) -> ResultItem:
    return ResultItem(
        trace_id=trace, evaluated_at=at, evaluator=evaluator, level="trace", outcome=outcome, score=score, **kw
    )  # type: ignore[arg-type]


def failing_trace(now: float = NOW) -> TraceDetail:
    at = now - 120
    common = {
        "service": "checkout",
        "agent": "order_assistant",
        "model": "gemini-2.5-flash",
        "input_excerpt": "Where is my order #A-1042?",
        "output_excerpt": f"Sorry, I could not find it. {XSS}",
    }
    steps = [
        Step(
            span_id="a1a1a1a1a1a1a1a1", depth=0, kind="agent", name="invoke_agent order_assistant", duration_ms=31_850
        ),
        Step(
            span_id="b2b2b2b2b2b2b2b2",
            parent_span_id="a1a1a1a1a1a1a1a1",
            depth=1,
            kind="llm",
            name="chat gemini-2.5-flash",
            start_offset_ms=12,
            duration_ms=840,
            model="gemini-2.5-flash",
            input_tokens=412,
            output_tokens=38,
            text='call lookup_order({"order": "A-1042"})',
        ),
        Step(
            span_id="c3c3c3c3c3c3c3c3",
            parent_span_id="b2b2b2b2b2b2b2b2",
            depth=2,
            kind="tool",
            name="execute_tool lookup_order",
            start_offset_ms=860,
            duration_ms=30_000,
            error=TOOL_ERROR,
            text='{"order": "A-1042"} → <no result>',
        ),
        Step(
            span_id="d4d4d4d4d4d4d4d4",
            parent_span_id="a1a1a1a1a1a1a1a1",
            depth=1,
            kind="llm",
            name="chat gemini-2.5-flash",
            start_offset_ms=30_870,
            duration_ms=980,
            model="gemini-2.5-flash",
            input_tokens=530,
            output_tokens=61,
            text=f"Sorry, I could not find it. {XSS}",
        ),
    ]
    summary = TraceSummary(
        trace_id=FAILING_TRACE,
        evaluated_at=at,
        service="checkout",
        agents=["order_assistant"],
        input="Where is my order #A-1042?",
        output=f"Sorry, I could not find it. {XSS}",
        span_count=4,
        duration_ms=31_850,
        has_errors=True,
        models=[ModelUsage(model="gemini-2.5-flash", calls=2, input_tokens=942, output_tokens=99)],
        tools=["lookup_order"],
        errors=[ErrorSpan(span_id="c3c3c3c3c3c3c3c3", name="execute_tool lookup_order", kind="tool", error=TOOL_ERROR)],
    )
    results = [
        _result(FAILING_TRACE, "tool_success_rate", "fail", 0.5, at, explanation=EXPLANATION, **common),
        _result(FAILING_TRACE, "error_free", "fail", 0.0, at, explanation=f"span failed: {XSS}", **common),
        _result(FAILING_TRACE, "latency", "pass", 0.93, at, explanation="31.9 s within 60 s", **common),
        _result(FAILING_TRACE, "pii_leak", "skip", None, at, skip_reason="no_output_text", **common),
    ]
    return TraceDetail(summary=summary, steps=steps, results=results)


def passing_trace(now: float = NOW) -> TraceDetail:
    at = now - 600
    common = {
        "service": "search",
        "agent": "researcher",
        "model": "claude-sonnet",
        "input_excerpt": "Summarise the paper",
    }
    summary = TraceSummary(
        trace_id=PASSING_TRACE,
        evaluated_at=at,
        service="search",
        agents=["researcher"],
        input="Summarise the paper",
        output="The paper shows …",
        span_count=3,
        duration_ms=4200,
        models=[ModelUsage(model="claude-sonnet", calls=1, input_tokens=2000, output_tokens=300)],
        tools=["web_search"],
    )
    steps = [
        Step(span_id="e5e5e5e5e5e5e5e5", depth=0, kind="agent", name="invoke_agent researcher", duration_ms=4200),
        Step(span_id="f6f6f6f6f6f6f6f6", depth=1, kind="tool", name="execute_tool web_search", duration_ms=900),
        Step(span_id="0707070707070707", depth=1, kind="llm", name="chat claude-sonnet", duration_ms=3100),
    ]
    results = [
        _result(PASSING_TRACE, name, "pass", 1.0, at, **common)
        for name in ("tool_success_rate", "error_free", "latency")
    ]
    return TraceDetail(summary=summary, steps=steps, results=results)


def older_latency_failures(now: float = NOW, count: int = 60) -> list[ResultItem]:
    """`count` latency failures, one a minute back from an hour ago, on made-up traces (not stored)."""
    return [
        _result(
            f"{i + 1:032x}",
            "latency",
            "fail",
            0.4,
            now - 3600 - 60 * i,
            explanation=f"{45 + i} s over 30 s",
            service="checkout" if i % 3 else "search",
            agent="order_assistant",
            model="gemini-2.5-flash",
        )
        for i in range(count)
    ]


def evaluator_infos() -> list[EvaluatorStatus]:
    windows = [EvaluatorWindow(window="5m", samples=40, pass_ratio=0.62), EvaluatorWindow(window="1h", samples=410)]
    return [
        EvaluatorStatus(
            name="tool_success_rate",
            kind="rule",
            level="trace",
            threshold=0.9,
            alert_min_pass_ratio=0.95,
            alert_window=300,
            alert_state="firing",
            windows=windows,
        ),
        EvaluatorStatus(name="error_free", kind="rule", level="trace", threshold=1.0),
        EvaluatorStatus(name="latency", kind="rule", level="trace", threshold=0.5),
        EvaluatorStatus(name="pii_leak", kind="rule", level="trace", sampling=0.25),
    ]


def sample_traces(now: float = NOW) -> list[TraceDetail]:
    return [failing_trace(now), passing_trace(now)]


def sample_facts() -> Facts:
    return Facts(
        failing_trace=FAILING_TRACE,
        evaluator="tool_success_rate",
        explanation=EXPLANATION,
        step_names=(
            "invoke_agent order_assistant",
            "chat gemini-2.5-flash",
            "execute_tool lookup_order",
            "chat gemini-2.5-flash",
        ),
        error_step="execute_tool lookup_order",
        other_evaluators=("error_free", "latency", "pii_leak"),
    )
