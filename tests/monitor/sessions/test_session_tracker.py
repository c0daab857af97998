"""The daemon's conversations: turns grouped into sessions, completed after `idle` with no new turn (an injected
clock), bounded by max_open_sessions and max_turns with what is cut counted, late turns counted and not
re-evaluated, open sessions completed at shutdown; a completed session's evaluators' results reach the metrics
through the tally at level "session"."""

from __future__ import annotations

import asyncio

from evaluators.sessions import SessionRef, Turn, TurnError
from monitor.config.sessions import SessionsConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.turn_wire import turn_of_wire, turn_wire
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.sessions.book import SessionBook
from monitor.sessions.evaluation import SessionEvaluation
from monitor.sessions.tracker import SessionTracker
from tests.support.session_evals import no_handoff, session_boom, session_errors

IDLE = 15.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def turn(n: int, *, start: int | None = None, tools: tuple[str, ...] = (), error: bool = False) -> Turn:
    trace_id = f"{n:032x}"
    begin = start if start is not None else n * 1_000_000_000
    errors = (TurnError("tool", "get_weather", "HTTP 500"),) if error else ()
    return Turn(trace_id, begin, begin + 500_000_000, f"question {n}", f"answer {n}", tools, errors, service="shop")


def wire(session_id: str, t: Turn, source: str = "session.id") -> tuple:
    return turn_wire(SessionRef(session_id, source), t)


def book(clock: Clock, **limits: int) -> SessionBook:
    return SessionBook(IDLE, limits.get("max_open_sessions", 100), limits.get("max_turns", 50), clock=clock)


def add(b: SessionBook, session_id: str, t: Turn) -> list:
    return b.add(turn_of_wire(wire(session_id, t)))


# --- the book ------------------------------------------------------------------------------------------------
def test_a_session_is_complete_after_idle_without_a_new_turn() -> None:
    clock = Clock()
    b = book(clock)
    add(b, "s1", turn(1))
    clock.now += 10
    add(b, "s1", turn(2))  # the idle time starts again from here
    clock.now += IDLE - 1
    assert b.due() == [] and b.open_sessions == 1
    clock.now += 1
    [done] = b.due()
    assert (done.session_id, done.ended, done.source, done.trace_ids) == ("s1", "idle", "session.id", [
        turn(1).trace_id, turn(2).trace_id])  # fmt: skip
    assert b.open_sessions == 0 and b.due() == []


def test_interleaved_sessions_are_told_apart_and_complete_on_their_own() -> None:
    clock = Clock()
    b = book(clock)
    for n, session_id in enumerate(["a", "b", "a", "b"], 1):
        add(b, session_id, turn(n))
        clock.now += 5
    clock.now += IDLE - 10  # a's last turn is IDLE old, b's IDLE - 5
    [a] = b.due()
    assert a.session_id == "a" and a.trace_ids == [turn(1).trace_id, turn(3).trace_id]
    clock.now += 5
    [other] = b.due()
    assert other.session_id == "b" and other.trace_ids == [turn(2).trace_id, turn(4).trace_id]


def test_turns_arriving_out_of_order_are_kept_in_start_order() -> None:
    clock = Clock()
    b = book(clock)
    for n in (3, 1, 2):
        add(b, "s", turn(n))
    clock.now += IDLE
    [done] = b.due()
    assert [t.user_message for t in done.turns] == ["question 1", "question 2", "question 3"]


def test_beyond_max_open_sessions_the_longest_idle_one_is_cut() -> None:
    clock = Clock()
    b = book(clock, max_open_sessions=2)
    add(b, "first", turn(1))
    clock.now += 1
    add(b, "second", turn(2))
    clock.now += 1
    add(b, "first", turn(3))  # "second" is now the longest idle
    clock.now += 1
    [cut] = add(b, "third", turn(4))
    assert (cut.session_id, cut.ended) == ("second", "cut")
    assert b.open_sessions == 2 and b.is_open("first") and b.is_open("third")
    assert b.cut == {"max_open_sessions": 1, "max_open_turns": 0, "shutdown": 0}


def test_turns_beyond_max_turns_are_counted_not_kept() -> None:
    clock = Clock()
    b = book(clock, max_turns=2)
    for n in (1, 2, 3, 4):
        add(b, "s", turn(n))
    assert b.turns_cut == 2 and b.turns_held == 2
    clock.now += IDLE
    [done] = b.due()
    assert len(done.turns) == 2 and done.turns_cut == 2 and b.turns_held == 0


def test_a_turn_after_completion_is_late_and_does_not_reopen_the_session() -> None:
    clock = Clock()
    b = book(clock)
    add(b, "s", turn(1))
    clock.now += IDLE
    assert len(b.due()) == 1
    assert add(b, "s", turn(2)) == []
    assert b.late_turns == 1 and b.open_sessions == 0
    clock.now += IDLE
    assert b.due() == []


def test_completed_ids_are_remembered_within_a_bound() -> None:
    clock = Clock()
    b = book(clock, max_open_sessions=2)
    for n, session_id in enumerate(["a", "b", "c"], 1):
        add(b, session_id, turn(n))
        clock.now += IDLE
        b.due()
    add(b, "a", turn(9))  # forgotten (only the last 2 completed ids are remembered): a new session
    add(b, "c", turn(10))  # remembered: late
    assert b.late_turns == 1 and b.is_open("a") and not b.is_open("c")


def test_the_same_trace_twice_is_one_turn() -> None:
    clock = Clock()
    b = book(clock)
    add(b, "s", turn(1))
    add(b, "s", turn(1))
    assert b.duplicate_turns == 1 and b.turns_held == 1


def test_close_all_cuts_every_open_session() -> None:
    clock = Clock()
    b = book(clock)
    add(b, "a", turn(1))
    add(b, "b", turn(2))
    done = b.close_all()
    assert sorted(s.session_id for s in done) == ["a", "b"] and {s.ended for s in done} == {"cut"}
    assert b.cut["shutdown"] == 2 and b.open_sessions == 0


def test_a_turn_crosses_the_wire_unchanged() -> None:
    t = turn(7, tools=("get_weather", "request_human_agent"), error=True)
    back = turn_of_wire(wire("s-7", t, "gen_ai.conversation.id"))
    assert back == ("s-7", "gen_ai.conversation.id", t)
    assert all(isinstance(v, str | int | float | tuple | type(None)) for v in wire("s", t))


# --- the tracker: evaluation and metrics ---------------------------------------------------------------------
def tracker(clock: Clock, evaluators: list, **config: object) -> tuple[SessionTracker, list, MetricsExporter]:
    tallies: list[MetricsTally] = []
    metrics = MetricsExporter()

    def apply(tally: MetricsTally) -> None:
        tallies.append(tally)
        metrics.results.apply_tally(tally)

    settings = SessionsConfig.model_validate({"idle": IDLE, **config})
    evaluation = SessionEvaluation(evaluators)
    return SessionTracker(settings, evaluation, apply, metrics.sessions, clock=clock), tallies, metrics


def configured(*evaluators: object, sampling: float = 1.0) -> list[ConfiguredEvaluator]:
    return [ConfiguredEvaluator(e, e.name, sampling) for e in evaluators]  # type: ignore[attr-defined]


def sample(metrics: MetricsExporter, name: str, **labels: str) -> float:
    """The sample of `name` with exactly `labels` (a result's `source` left out: the daemon's own), 0 if none."""
    if name == "agent_eval_results_total":
        labels = {"source": "daemon", **labels}
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_a_completed_session_is_evaluated_once_at_session_level() -> None:
    clock = Clock()
    track, tallies, metrics = tracker(clock, configured(no_handoff, session_errors))
    track.add(
        [wire("handoff", turn(1)), wire("clean", turn(2)), wire("handoff", turn(3, tools=("request_human_agent",)))]
    )
    assert sample(metrics, "agent_monitor_sessions_open") == 2
    clock.now += IDLE
    assert len(track.check()) == 2
    assert asyncio.run(track.evaluate_waiting()) == 2
    [tally] = tallies
    handoff = tally.results[("no_handoff", "session", "shop", None, "")]
    assert (handoff.passed, handoff.failed, handoff.failed_trace) == (1, 1, turn(3).trace_id)  # the last turn
    results = "agent_eval_results_total"
    labels = {"evaluator": "no_handoff", "level": "session", "service": "shop", "agent": "", "variant": ""}
    assert sample(metrics, results, **labels, outcome="fail") == 1
    assert sample(metrics, results, **labels, outcome="pass") == 1
    assert sample(metrics, "agent_sessions_completed_total", service="shop", ended="idle") == 2
    assert sample(metrics, "agent_session_turns_count", service="shop") == 2
    assert sample(metrics, "agent_session_turns_sum", service="shop") == 3
    assert sample(metrics, "agent_monitor_sessions_open") == 0
    clock.now += IDLE  # nothing more to complete: no second evaluation
    assert track.check() == [] and asyncio.run(track.evaluate_waiting()) == 0 and len(tallies) == 1


def test_late_turns_and_cuts_are_counted_in_the_metrics() -> None:
    clock = Clock()
    track, tallies, metrics = tracker(clock, configured(no_handoff), max_open_sessions=1, max_turns=1)
    track.add([wire("a", turn(1)), wire("a", turn(2))])  # the second is beyond max_turns
    track.add([wire("b", turn(3))])  # cuts "a" for room
    track.add([wire("a", turn(4))])  # "a" is complete: late
    assert sample(metrics, "agent_monitor_session_turns_cut_total") == 1
    assert sample(metrics, "agent_monitor_sessions_cut_total", reason="max_open_sessions") == 1
    assert sample(metrics, "agent_monitor_session_turns_late_total") == 1
    assert sample(metrics, "agent_sessions_completed_total", service="shop", ended="cut") == 1
    assert sample(metrics, "agent_session_turns_sum", service="shop") == 2  # a's kept turn and the cut one
    asyncio.run(track.evaluate_waiting())
    [tally] = tallies
    assert tally.results[("no_handoff", "session", "shop", None, "")].passed == 1


def test_an_evaluator_that_raises_is_an_error_skip_and_sampling_is_by_session() -> None:
    clock = Clock()
    evaluators = [*configured(session_boom), *configured(no_handoff, sampling=0.0)]
    track, tallies, _ = tracker(clock, evaluators)
    track.add([wire("s", turn(1))])
    clock.now += IDLE
    track.check()
    asyncio.run(track.evaluate_waiting())
    [tally] = tallies
    assert tally.results[("session_boom", "session", "shop", None, "")].skips == {"error": 1}
    assert tally.results[("no_handoff", "session", "shop", None, "")].skips == {"sampled_out": 1}


def test_shutdown_completes_open_sessions_as_cut_and_evaluates_them() -> None:
    clock = Clock()
    track, tallies, metrics = tracker(clock, configured(no_handoff))

    async def scenario() -> None:
        await track.start()
        track.add([wire("a", turn(1)), wire("b", turn(2, tools=("request_human_agent",)))])
        await track.shutdown(5.0)
        await track.shutdown(5.0)  # twice: nothing more
        track.add([wire("c", turn(3))])  # after shutdown: ignored

    asyncio.run(scenario())
    [tally] = tallies
    counts = tally.results[("no_handoff", "session", "shop", None, "")]
    assert (counts.passed, counts.failed) == (1, 1)
    assert sample(metrics, "agent_monitor_sessions_cut_total", reason="shutdown") == 2
    assert sample(metrics, "agent_sessions_completed_total", service="shop", ended="cut") == 2
    assert track.open_sessions == 0


def test_the_periodic_check_completes_idle_sessions() -> None:
    """With a real clock and a short idle time: the tracker's own task completes and evaluates the session
    (a bounded poll on its state, no timing assertion)."""
    tallies: list[MetricsTally] = []
    settings = SessionsConfig.model_validate({"idle": 0.05})
    track = SessionTracker(settings, SessionEvaluation(configured(no_handoff)), tallies.append, check_every=0.01)

    async def scenario() -> None:
        await track.start()
        track.add([wire("s", turn(1))])
        for _ in range(500):
            if track.evaluated:
                break
            await asyncio.sleep(0.01)
        await track.shutdown(1.0)

    asyncio.run(scenario())
    assert track.evaluated == 1 and len(tallies) == 1


def test_session_judges_go_to_the_hook_not_to_the_rules() -> None:
    from evaluators.judges import LLMJudge
    from evaluators.sessions import Session

    class SessionJudge(LLMJudge):
        name = "conversation_check"
        level = "session"
        instructions = "Was the user's goal met?"

        def build_prompt(self, session: Session, task: object = None) -> str:
            return " / ".join(session.user_messages)

    clock = Clock()
    handed: list[tuple[str, list[str]]] = []
    settings = SessionsConfig.model_validate({"idle": IDLE})
    evaluation = SessionEvaluation([*configured(no_handoff), ConfiguredEvaluator(SessionJudge(), "conversation_check")])
    assert [c.label for c in evaluation.rules] == ["no_handoff"]
    track = SessionTracker(
        settings,
        evaluation,
        lambda tally: None,
        clock=clock,
        judge_sessions=lambda session, judges: handed.append((session.session_id, [c.label for c in judges])),
    )
    track.add([wire("s", turn(1))])
    clock.now += IDLE
    track.check()
    asyncio.run(track.evaluate_waiting())
    assert handed == [("s", ["conversation_check"])]


def test_beyond_max_open_turns_the_longest_idle_other_session_is_cut() -> None:
    """The turns held in all open sessions are bounded: a turn beyond `max_open_turns` completes the longest-idle
    other session early (never the one the turn is for)."""
    clock = Clock()
    b = SessionBook(IDLE, 100, 50, max_open_turns=3, clock=clock)
    assert add(b, "a", turn(1)) == [] and add(b, "a", turn(2)) == []
    clock.now += 1
    assert add(b, "b", turn(3)) == []
    [cut] = add(b, "b", turn(4))
    assert (cut.session_id, cut.ended, len(cut.turns)) == ("a", "cut", 2)
    assert b.cut["max_open_turns"] == 1 and b.turns_held == 2 and b.is_open("b")
    add(b, "b", turn(5))
    add(b, "b", turn(6))  # one session alone may pass the bound up to max_turns: nothing else to cut
    assert b.is_open("b") and b.cut["max_open_turns"] == 1
