"""The store's per-window aggregates (monitor/store/signal_rows.py) as each signal's `Moments`, by `SignalId`.

Series stay bounded: `select` keeps the `max_agents` (service, agent) pairs with the most traces and, for each, its
`max_subjects` most frequent tools (and, for each service, the most frequent conversation endings), counted over
every window of the report at once. So every window yields the same subjects, and a subject present in one window
only is still compared: a tool no longer called has a recent share of 0 against its baseline's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from monitor.store.signal_rows import SessionAggregate, TraceAggregate, WindowAggregates

from .model import Moments, SignalId
from .settings import DriftSettings

Agent = tuple[str, str]  # (service, agent)
SignalMoments = dict[SignalId, Moments]


class Coverage(NamedTuple):
    """The agents, tools and conversation endings a report covers."""

    agents: frozenset[Agent]
    tools: dict[Agent, frozenset[str]]
    services: frozenset[str]  # the services whose conversations are covered
    endings: dict[str, frozenset[str]]


class ReportMoments(NamedTuple):
    """Each signal's moments in the recent window and in both baselines (the same hours summed over the days)."""

    recent: SignalMoments
    same_hours: SignalMoments
    trailing: SignalMoments


def _top(counts: Counter[str] | Counter[Agent], limit: int) -> frozenset:
    """The `limit` keys with the largest counts (ties by key, so that every replica keeps the same)."""
    return frozenset(sorted(counts, key=lambda key: (-counts[key], key))[:limit])


def select(config: DriftSettings, windows: Iterable[WindowAggregates]) -> Coverage:
    """What the report covers, counted over all its windows: the pairs with the most traces (then verdicts), their
    most frequent tools, the services with the most conversations and their most frequent endings."""
    traces: Counter[Agent] = Counter()
    verdicts: Counter[Agent] = Counter()
    tools: dict[Agent, Counter[str]] = {}
    sessions: Counter[str] = Counter()
    endings: dict[str, Counter[str]] = {}
    for window in windows:
        for t in window.traces:
            traces[(t.service, t.agent)] += t.traces
        for r in window.results:
            verdicts[(r.service, r.agent)] += r.verdicts
        for tool in window.tools:
            tools.setdefault((tool.service, tool.agent), Counter())[tool.tool] += tool.traces
        for s in window.sessions:
            sessions[s.service] += s.sessions
            endings.setdefault(s.service, Counter())[s.ended] += s.sessions
    pairs = set(traces) | set(verdicts)
    agents = frozenset(sorted(pairs, key=lambda p: (-traces[p], -verdicts[p], p))[: config.max_agents])
    services = _top(sessions, config.max_agents)
    return Coverage(
        agents=agents,
        tools={a: _top(c, config.max_subjects) for a, c in tools.items() if a in agents},
        services=services,
        endings={s: _top(c, config.max_subjects) for s, c in endings.items() if s in services},
    )


_moments = Moments
_IDS: dict[tuple[str, str, str, str], SignalId] = {}  # the ids built so far: a report asks for each id again
_MAX_IDS = 200_000


def _id(*, service: str, agent: str, signal: str, subject: str) -> SignalId:
    key = (service, agent, signal, subject)
    found = _IDS.get(key)
    if found is None:
        if len(_IDS) >= _MAX_IDS:
            _IDS.clear()
        found = _IDS[key] = SignalId(service=service, agent=agent, signal=signal, subject=subject)
    return found


def _ratio(n: float, k: float) -> Moments:
    """A proportion's moments: k of n items (rounded to whole items, k within [0, n])."""
    items = round(n)
    hits = float(min(max(round(k), 0), items))
    return _moments(n=items, total=hits, squares=hits)


def _trace_moments(t: TraceAggregate, tools: frozenset[str], calling: dict[str, int]) -> SignalMoments:
    def at(signal: str, subject: str = "") -> SignalId:
        return _id(service=t.service, agent=t.agent, signal=signal, subject=subject)

    found = {
        at("error_rate"): _ratio(t.traces, t.errors),
        at("tool_success"): _ratio(t.tool_calls, t.tool_calls - t.tool_failures),
        at("llm_calls"): _moments(n=t.traces, total=t.llm_calls, squares=t.llm_calls_sq),
        at("tool_calls"): _moments(n=t.traces, total=t.tool_calls, squares=t.tool_calls_sq),
        at("response_length"): _moments(n=t.response_n, total=t.response_chars, squares=t.response_chars_sq),
        at("tokens"): _moments(n=t.tokens_n, total=t.tokens, squares=t.tokens_sq),
        at("cost"): _moments(n=t.cost_n, total=t.cost, squares=t.cost_sq),
        at("latency"): _moments(n=t.latency_n, total=t.latency, squares=t.latency_sq),
    }
    for tool in tools:
        found[at("tool_share", tool)] = _ratio(t.traces, calling.get(tool, 0))
    return found


def _conversation_moments(service: str, rows: Sequence[SessionAggregate], endings: frozenset[str]) -> SignalMoments:
    def at(signal: str, subject: str = "") -> SignalId:
        return _id(service=service, agent="", signal=signal, subject=subject)

    sessions = sum(r.sessions for r in rows)
    ended = Counter[str]()
    for r in rows:
        ended[r.ended] += r.sessions
    found = {at("turns"): _moments(n=sessions, total=sum(r.turns for r in rows), squares=sum(r.turns_sq for r in rows))}
    for ending in endings:
        found[at("conversation_ended", ending)] = _ratio(sessions, ended[ending])
    return found


def window_moments(window: WindowAggregates, coverage: Coverage) -> SignalMoments:
    """One window's moments of every signal of the selected agents (a signal without an item left out, but a
    selected tool or ending the window lacks is there with a share of 0)."""
    found: SignalMoments = {}
    calling: dict[Agent, dict[str, int]] = {}
    for tool in window.tools:
        calling.setdefault((tool.service, tool.agent), {})[tool.tool] = tool.traces
    for t in window.traces:
        agent = (t.service, t.agent)
        if agent in coverage.agents and t.traces > 0:
            found.update(_trace_moments(t, coverage.tools.get(agent, frozenset()), calling.get(agent, {})))
    for r in window.results:
        if (r.service, r.agent) in coverage.agents:
            pass_ratio = _id(service=r.service, agent=r.agent, signal="pass_ratio", subject=r.evaluator)
            score = _id(service=r.service, agent=r.agent, signal="score", subject=r.evaluator)
            found[pass_ratio] = found.get(pass_ratio, Moments()) + _ratio(r.verdicts, r.passed)
            found[score] = found.get(score, Moments()) + _moments(n=r.scores_n, total=r.scores, squares=r.scores_sq)
    by_service: dict[str, list[SessionAggregate]] = {}
    for s in window.sessions:
        if s.service in coverage.services:
            by_service.setdefault(s.service, []).append(s)
    for service, rows in by_service.items():
        found.update(_conversation_moments(service, rows, coverage.endings.get(service, frozenset())))
    return {key: m for key, m in found.items() if m.n > 0}


def add_moments(parts: Iterable[SignalMoments]) -> SignalMoments:
    """Several windows' moments summed signal by signal (the same hours of several days as one baseline)."""
    total: SignalMoments = {}
    for part in parts:
        for key, m in part.items():
            total[key] = total[key] + m if key in total else m
    return total


def report_moments(
    config: DriftSettings,
    recent: WindowAggregates,
    same_hours: Sequence[WindowAggregates],
    trailing: WindowAggregates,
) -> ReportMoments:
    """Every window of one report as moments, over one coverage (`select`) of all of them."""
    coverage = select(config, [recent, *same_hours, trailing])
    return ReportMoments(
        recent=window_moments(recent, coverage),
        same_hours=add_moments(window_moments(w, coverage) for w in same_hours),
        trailing=window_moments(trailing, coverage),
    )


__all__ = [
    "Agent",
    "Coverage",
    "ReportMoments",
    "SignalMoments",
    "add_moments",
    "report_moments",
    "select",
    "window_moments",
]
