"""`agent-monitor inspect FILE...`: show how each trace is understood, as a tree or as JSON, and the sessions
(conversations) the traces make up."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from evaluators.sessions import session_of
from evaluators.traces import TraceDecodeError, load_traces
from evaluators.traces.model import Trace
from evaluators.traces.serialize import trace_dict
from evaluators.traces.spans import AgentSpan, HandoffSpan, LLMSpan, RetrieverSpan, Span, ToolSpan
from monitor.commands.inspect_sessions import render_session, session_dict, sessions_of
from monitor.store.step_tree import step_tree
from monitor.text import clip, shown


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="decode OTLP trace files and print each trace's normalized view",
        description="Decode OTLP protobuf, OTLP-JSON or collector JSON-lines files (or directories) "
        "and print each trace as agent → LLM call → tool call, then the sessions (conversations) found: "
        "traces with the same session id (OpenInference session.id, gen_ai.conversation.id, ...), one turn each.",
    )
    parser.add_argument("paths", nargs="+", metavar="FILE", help="trace files or directories")
    parser.add_argument(
        "--json", action="store_true", help="print the normalized views as JSON (with --sessions: the sessions)"
    )
    parser.add_argument(
        "--sessions", action="store_true", help="print only the sessions: per turn its trace, user message, answer"
    )
    parser.add_argument(
        "--session-attribute",
        action="append",
        default=[],
        metavar="NAME",
        dest="session_attribute",
        help="a span or resource attribute that names the session, tried before the conventions' (repeatable)",
    )
    parser.add_argument("--width", type=int, default=80, help="characters of input/output text to show")
    parser.set_defaults(handler=run)


def _label(span: Span, width: int) -> str:
    duration = f"{span.duration_ms:.0f}ms"
    error = f"  ERROR {clip(span.error, width)}" if span.has_error else ""
    if isinstance(span, LLMSpan):
        m = span.metrics
        tokens = f"{m.input_tokens}→{m.output_tokens} tok" if m.has_usage else "no usage"
        asks = ", ".join(c.name for c in span.tool_calls)
        said = f'  "{clip(span.response, width)}"' if span.response else ""
        wants = f"  → calls {asks}" if asks else ""
        return f"llm {span.model or '?'}  {tokens}  {duration}{wants}{said}{error}"
    if isinstance(span, HandoffSpan):
        return f"handoff {span.agent_name or '?'} → {span.to_agent or '?'}  {duration}"
    if isinstance(span, ToolSpan):
        result = f" → {clip(span.result, width // 2)}" if span.result is not None else ""
        return f"tool {span.name}({clip(span.arguments, width // 2)}){result}  {duration}{error}"
    if isinstance(span, RetrieverSpan):
        return f"retrieval {clip(span.query, width // 2)!r} → {len(span.documents)} documents  {duration}{error}"
    if isinstance(span, AgentSpan):
        return f"agent {span.name}  {duration}{error}"
    return f"{clip(span.span_name, 60)}  {duration}{error}"


def render_tree(trace: Trace, width: int = 80) -> str:
    m = trace.metrics
    usage = m.token_usage
    lines = [
        f"trace {trace.trace_id}  service={clip(trace.service_name, 40) or '?'}  spans={trace.span_count}  "
        f"{m.total_duration_ms:.0f}ms  llm_calls={m.llm_call_count}  tool_calls={m.tool_call_count}  "
        f"tokens={usage.input_tokens}→{usage.output_tokens} (total {usage.total_tokens})  errors={m.error_count}",
        f"  input:  {shown(trace.input, width)}",
        f"  output: {shown(trace.output, width)}",
    ]
    if trace.input_source is not None:  # which rule chose the input (evaluators/traces/turn_input.py)
        lines.insert(2, f"  input from: {trace.input_source}")
    if trace.agent_names:
        lines.append(f"  agents: {', '.join(clip(a, 40) for a in trace.agent_names)}")
    for handoff in trace.handoffs:
        lines.append(f"  handoff: {handoff.from_agent} → {handoff.to_agent}")
    for span, level, wrapper in step_tree(trace):  # the same tree the review stores (store/step_tree.py)
        if wrapper:  # the outer span of a call counted once, below it
            label = f"{clip(span.span_name, 60)}  (wraps the call below)  {span.duration_ms:.0f}ms"
        else:
            label = _label(span, width)
        lines.append("  " + "   " * level + "└─ " + label)
    return "\n".join(lines)


def _trace_view(trace: Trace, attributes: list[str]) -> dict:
    view = trace_dict(trace)
    ref = session_of(trace, attributes)
    view["session"] = {"session_id": ref.session_id, "source": ref.source} if ref else None
    return view


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    attributes = [a for a in getattr(args, "session_attribute", None) or [] if a]
    only_sessions = bool(getattr(args, "sessions", False))
    try:
        traces = load_traces(args.paths)
    except TraceDecodeError as exc:
        print(f"agent-monitor inspect: {exc}", file=sys.stderr)
        return 2
    if args.json:
        views = (
            [session_dict(s) for s in sessions_of(traces, attributes)]
            if only_sessions
            else [_trace_view(t, attributes) for t in traces]
        )
        json.dump(views, out, indent=2, ensure_ascii=False)
        out.write("\n")
        return 0
    if not traces:
        print("no spans found", file=out)
    blocks = [] if only_sessions else [render_tree(trace, args.width) for trace in traces]
    sessions = sessions_of(traces, attributes)
    blocks += [render_session(session, args.width) for session in sessions]
    if only_sessions and traces and not sessions:
        blocks.append(f"no sessions: none of the {len(traces)} traces names a session id")
    out.write("\n\n".join(blocks) + ("\n" if blocks else ""))
    return 0
