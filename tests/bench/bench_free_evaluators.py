"""Benchmark: the share of the default evaluator set's per-trace evaluation time each free evaluator
(response_language, secret_leak, user_sentiment) takes, over the recorded corpus (tests/fixtures/corpus: real
libraries' traces).

The whole: the daemon's `TraceEvaluator` (built as the daemon builds it, explanations' dimensions included) with
the default set, per trace. Each part: the evaluator alone over the same traces' views (for an llm rule, every LLM
call), with `pii_leak` as a control (a rule already in the set). Timing a part alone, not the set with and without
it: on a shared host the difference of two ~100 ms rounds moves by more than a part costs. Each figure is the best
of `REPEATS` rounds. `response_language`'s request is classified by explanations' `input.language` first, as in the
daemon (the same cut, remembered: `evaluators.language`), so its part is what it adds. `user_sentiment` runs once
per conversation: its time over the corpus's sessions against the per-trace evaluation of their turns.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evaluators import builtin, load_traces
from evaluators.language import _classify
from evaluators.sdk import dispatch_session
from evaluators.sessions import group_sessions
from monitor.config import MonitorConfig
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.explain.dimensions import language_of
from tests.conftest import corpus_scenarios
from tests.support.completed_traces import corpus_traces

REPEATS = 25


def best(run: Callable[[], object], before: Callable[[], object] = lambda: None) -> float:
    """The best of REPEATS rounds of `run` (seconds), `before` untimed ahead of each."""
    run()
    times = []
    for _ in range(REPEATS):
        before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def whole_per_trace() -> tuple[float, int]:
    """Seconds per corpus trace of the daemon's evaluation with the default set, and the set's size."""
    config = MonitorConfig()
    built, problems = build_evaluators(config.evaluator_entries())
    if problems:
        raise RuntimeError(f"the default evaluators did not build: {problems}")
    evaluator = TraceEvaluator.from_config(built, config)
    traces = corpus_traces()
    seconds = best(lambda: evaluator.evaluate_batch(traces), _classify.cache_clear)
    return seconds / len(traces), len(evaluator.evaluators)


def part_per_trace(name: str, traces: list) -> float:
    """Seconds per trace of evaluator `name` alone over the traces' views."""
    evaluator = builtin(name)
    if evaluator.level == "llm":
        subjects = [call for trace in traces for call in trace.get_llm_calls()]
    else:
        subjects = list(traces)

    def explain_first() -> None:  # what explanations' input.language has classified before the evaluator runs
        _classify.cache_clear()
        for trace in traces:
            if trace.input:
                language_of(trace.input)

    seconds = best(lambda: [evaluator.run(s) for s in subjects], explain_first)
    return seconds / len(traces)


def session_part(per_trace: float) -> tuple[float, int]:
    """user_sentiment's time per conversation over (its turns' per-trace evaluation + it), and the sessions."""
    traces = [t for scenario in corpus_scenarios() for t in load_traces(scenario)]
    sessions = [s for s in group_sessions(traces) if len(s.turns) > 1]
    sentiment = [builtin("user_sentiment")]
    seconds = best(lambda: [list(dispatch_session(s, sentiment)) for s in sessions])
    turns = sum(len(s.turns) for s in sessions)
    return seconds / (turns * per_trace + seconds), len(sessions)


def main() -> None:
    whole, size = whole_per_trace()
    traces = [t for scenario in corpus_scenarios() for t in load_traces(scenario)]
    print(f"free evaluators: {len(traces)} corpus traces, the default set of {size} per-trace evaluators")
    print(f"  default set, per trace         {whole * 1e6:8.0f} µs (the daemon's TraceEvaluator)")
    for name in ("response_language", "secret_leak", "pii_leak"):
        part = part_per_trace(name, traces)
        note = "(control: a rule already in the set)" if name == "pii_leak" else "(target ≤ 3 %)"
        print(f"  {name:<20} {part * 1e6:6.1f} µs  {100 * part / whole:5.1f} % of it {note}")
    share, count = session_part(whole)
    print(f"  {'user_sentiment':<20} {100 * share:13.1f} % of a conversation's evaluation ({count} sessions)")


if __name__ == "__main__":
    main()
