"""Evaluated sessions in the result store, on SQLite and on a real PostgreSQL server: one `sessions` row per
completed conversation (its turns as masked, bounded JSON summaries), its session-level results in `results` with
`session_id`, kept by `store.results`, upserted, pruned with the traces."""

from __future__ import annotations

import json
import random
import time

from evaluators import EvalResult
from evaluators.sessions import Session, Turn, TurnError
from monitor.engine.signing import Signer
from monitor.outcomes import ResultRow, SessionOutcome
from monitor.store.schema import SESSION_COLUMNS, SESSION_TURN_FIELDS
from tests.support.backends import Backend
from tests.support.store_builders import GOOGLE_KEY, OPENAI_KEY, outcome, row

SESSION = "conv-1"
TRACES = ("a1" * 16, "b2" * 16, "c3" * 16)
NOW = round(time.time())  # completed: within the retention (the store prunes when it writes)


def turn(n: int, user: str, answer: str | None = "sure", *, error: str | None = None) -> Turn:
    errors = (TurnError("tool", "execute_tool lookup", error),) if error else ()
    start = 1_700_000_000_000_000_000 + n * 60_000_000_000
    return Turn(TRACES[n], start, start + 2_000_000_000, user, answer, ("lookup",), errors, ("support",),
                100, 20, 0.001, "shop")  # fmt: skip


def session(*turns: Turn, completed_at: float = NOW, session_id: str = SESSION) -> Session:
    done = Session(session_id, list(turns), "session.id", "idle")
    done.completed_at = completed_at
    return done


def conversation(**kwargs: float) -> Session:
    return session(
        turn(0, "Where is my order 42?"),
        turn(1, f"My key is {OPENAI_KEY}, please check", "checking", error=f"denied for {GOOGLE_KEY}"),
        turn(2, "Let me talk to a human", None),
        **kwargs,
    )


def rule(evaluator: str, passed: bool | None, skip: str | None = None) -> ResultRow:
    return row(evaluator, passed, skip, level="session", explanation=f"{evaluator} said so")


def stored_session(backend: Backend, session_id: str = SESSION) -> dict | None:
    rows = backend.rows(f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE session_id = ?", (session_id,))
    return dict(zip(SESSION_COLUMNS, rows[0])) if rows else None


def session_results(backend: Backend) -> list[tuple]:
    return backend.rows(
        "SELECT evaluator, level, trace_id, session_id, passed, skip_reason, span_id, agent, model FROM results"
        " WHERE session_id IS NOT NULL ORDER BY evaluator"
    )


def test_a_session_is_one_row_with_its_turns_and_its_results_rows(backend: Backend) -> None:
    store = backend.store(results="all")
    rows = (rule("a_handoff", False), rule("b_rephrase", True), rule("c_judge", None, "judge_unavailable"),
            rule("d_sampled", None, "sampled_out"))  # fmt: skip
    store.write([SessionOutcome(conversation(), rows)])
    stored = stored_session(backend)
    assert stored is not None
    assert stored["service"] == "shop" and stored["source"] == "session.id" and stored["ended"] == "idle"
    assert (stored["turn_count"], stored["turns_cut"], stored["total_tokens"], stored["failed"]) == (3, 0, 360, 1)
    assert stored["completed_at"] == NOW and abs(stored["cost_usd"] - 0.003) < 1e-9
    assert stored["started_at"] == 1_700_000_000.0 and stored["last_turn_at"] == 1_700_000_000.0 + 120 + 2

    turns = json.loads(stored["turns"])
    assert [len(t) for t in turns] == [len(SESSION_TURN_FIELDS)] * 3
    first, second, third = (dict(zip(SESSION_TURN_FIELDS, t)) for t in turns)
    assert [t[0] for t in turns] == list(TRACES)
    assert first["user_message"] == "Where is my order 42?" and first["tool_calls"] == ["lookup"]
    assert OPENAI_KEY not in second["user_message"] and "redacted" in second["user_message"]  # masked
    [[kind, name, message]] = second["errors"]
    assert (kind, name) == ("tool", "execute_tool lookup") and GOOGLE_KEY not in message and "denied" in message
    assert third["answer"] is None and third["agents"] == ["support"] and third["input_tokens"] == 100
    assert OPENAI_KEY not in stored["turns"] and GOOGLE_KEY not in stored["turns"]

    # Every result but the sampled-out skip, at level session, on the last turn's trace, with the session id.
    assert session_results(backend) == [
        ("a_handoff", "session", TRACES[2], SESSION, 0, None, None, None, None),
        ("b_rephrase", "session", TRACES[2], SESSION, 1, None, None, None, None),
        ("c_judge", "session", TRACES[2], SESSION, None, "judge_unavailable", None, None, None),
    ]
    store.close()


def test_with_results_failing_only_sessions_with_a_failure_or_a_skip_are_kept(backend: Backend) -> None:
    store = backend.store(results="failing")
    store.write(
        [
            SessionOutcome(conversation(session_id="clean"), (rule("a", True), rule("b", None, "sampled_out"))),
            SessionOutcome(conversation(session_id="no-results"), ()),
            SessionOutcome(conversation(session_id="skipped"), (rule("a", True), rule("b", None, "error"))),
            SessionOutcome(conversation(session_id="failed"), (rule("a", False), rule("b", True))),
        ]
    )
    assert {r[0] for r in backend.rows("SELECT session_id FROM sessions")} == {"skipped", "failed"}
    kept = backend.rows("SELECT session_id, evaluator, passed FROM results ORDER BY session_id, evaluator")
    assert kept == [("failed", "a", 0), ("skipped", "b", None)]  # passing results are not kept
    assert stored_session(backend, "failed")["failed"] == 1  # type: ignore[index]
    assert stored_session(backend, "skipped")["failed"] == 0  # type: ignore[index]
    store.close()

    every = backend.store(results="all")  # `all`: every session, even one without results
    every.write([SessionOutcome(conversation(session_id="no-results"), ())])
    assert stored_session(backend, "no-results") is not None
    every.close()


def test_a_session_completed_again_replaces_its_row_and_its_judges_add_to_it(backend: Backend) -> None:
    store = backend.store(results="failing")
    store.write([SessionOutcome(conversation(completed_at=NOW - 100), (rule("rules", False),))])
    store.write([SessionOutcome(conversation(completed_at=NOW - 100), (rule("judge", False), rule("judge2", True)))])
    stored = stored_session(backend)
    assert stored is not None and (stored["failed"], stored["turn_count"]) == (2, 3)  # one completion, two writes

    again = session(turn(0, "Hello again"), completed_at=NOW)  # the id forgotten, the conversation went on
    store.write([SessionOutcome(again, (rule("rules", None, "error"),))])
    stored = stored_session(backend)
    assert stored is not None and (stored["failed"], stored["turn_count"], stored["completed_at"]) == (0, 1, NOW)
    assert [t[3] for t in json.loads(stored["turns"])] == ["Hello again"]
    assert backend.scalar("SELECT COUNT(*) FROM sessions") == 1
    store.close()


def test_a_session_evaluated_again_replaces_its_session_level_results(backend: Backend) -> None:
    """A completion's results (its rules' and, later, its judges') stand together; a later completion of the same
    session (re-evaluated, or claimed again after a crash) replaces them, and passing where only failures are kept
    leaves neither row nor results; other sessions' results and the turns' own results stay."""
    store = backend.store(results="failing")
    store.write([outcome(TRACES[0], row("error_free", False))])  # a turn's trace-level result
    other = conversation(session_id="other", completed_at=NOW - 300)
    store.write([SessionOutcome(other, (rule("user_rephrase", False),))])
    first = conversation(completed_at=NOW - 200)
    store.write([SessionOutcome(first, (rule("user_rephrase", False), rule("turn_errors", None, "error")))])
    store.write([SessionOutcome(first, (rule("user_frustration", False),))])  # its judges, later
    assert [r[0] for r in session_results(backend) if r[3] == SESSION] == [
        "turn_errors",
        "user_frustration",
        "user_rephrase",
    ]

    again = session(turn(0, "Hello again"), turn(1, "and again"), completed_at=NOW - 100)
    store.write([SessionOutcome(again, (rule("user_rephrase", False), rule("turn_errors", True)))])
    store.write([SessionOutcome(again, (rule("user_frustration", None, "judge_unavailable"),))])
    mine = [(r[0], r[2], r[4], r[5]) for r in session_results(backend) if r[3] == SESSION]
    assert mine == [("user_frustration", TRACES[1], None, "judge_unavailable"), ("user_rephrase", TRACES[1], 0, None)]
    stored = stored_session(backend)
    assert stored is not None and (stored["failed"], stored["turn_count"]) == (1, 2)

    store.write([SessionOutcome(session(turn(0, "Hi"), completed_at=NOW), (rule("user_rephrase", True),))])
    assert stored_session(backend) is None  # it passes now: nothing of it is kept, nothing stale stays
    assert [r[3] for r in session_results(backend)] == ["other"]
    assert backend.scalar("SELECT COUNT(*) FROM results WHERE session_id IS NULL") == 1
    assert stored_session(backend, "other") is not None
    store.close()


def test_a_failing_session_result_counts_its_failure_signature(backend: Backend) -> None:
    store = backend.store(results="failing")
    result = EvalResult(0.0, passed=False, explanation="handed over to a human at turn 3")
    signed = row("no_handoff", False, level="session")._replace(
        signature=Signer()("no_handoff", "session", None, result)
    )
    assert signed.signature is not None
    store.write([SessionOutcome(conversation(), (signed,))])
    [(evaluator, level, count, traces, agents)] = backend.rows(
        "SELECT evaluator, level, count, example_traces, agents FROM signatures"
    )
    assert (evaluator, level, count) == ("no_handoff", "session", 1)
    assert json.loads(traces) == [TRACES[2]] and json.loads(agents) == ["support"]
    assert backend.scalar("SELECT signature FROM results WHERE session_id = ?", (SESSION,)) == signed.signature.id
    store.close()


def test_sessions_completed_before_the_retention_are_pruned(backend: Backend) -> None:
    store = backend.store(results="failing", retention_seconds=3600)
    now = time.time()
    store.write([SessionOutcome(conversation(session_id="old", completed_at=now - 7200), (rule("a", False),))])
    store.write([SessionOutcome(conversation(session_id="new", completed_at=now - 60), (rule("a", False),))])
    store.write([outcome("d4" * 16, row("t", False))])
    backend.execute("UPDATE results SET created_at = ? WHERE session_id = 'old'", (now - 7200,))
    store.prune(now)
    assert [r[0] for r in backend.rows("SELECT session_id FROM sessions")] == ["new"]
    assert {r[0] for r in backend.rows("SELECT session_id FROM results")} == {"new", None}
    store.close()


def test_past_max_size_the_sessions_completed_up_to_the_oldest_traces_kept_go_with_them(backend: Backend) -> None:
    """Sessions completed at 0, 10, ... 390 among 400 traces created at 0 ... 399 (about 3 kB of text each)."""
    store = backend.store(results="failing", max_size=512 * 1024, retention_seconds=1e12)
    rng = random.Random(7)
    words = [f"w{n:04d}" for n in range(5000)]
    completed = list(range(0, 400, 10))
    for n in completed:
        store.write([SessionOutcome(conversation(session_id=f"s{n}", completed_at=n), (rule("a", False),))])
    for n in range(400):
        text = " ".join(rng.choice(words) for _ in range(600))  # poorly compressible (PostgreSQL's TOAST)
        store.write([outcome(f"{n:032d}", row("a", False), given=text)])
    backend.execute("UPDATE traces SET created_at = CAST(substr(trace_id, 27) AS INTEGER)")
    backend.execute("UPDATE results SET created_at = CAST(substr(trace_id, 27) AS INTEGER) WHERE session_id IS NULL")
    backend.execute(
        "UPDATE results SET created_at = (SELECT completed_at FROM sessions s WHERE s.session_id = results.session_id)"
        " WHERE session_id IS NOT NULL"
    )
    assert store.enforce_size() > 0
    oldest_kept = backend.scalar("SELECT MIN(created_at) FROM traces")
    assert 0 < oldest_kept < 399
    sessions = sorted(int(s[1:]) for (s,) in backend.rows("SELECT session_id FROM sessions"))
    assert sessions == [n for n in completed if n >= oldest_kept]
    kept_results = {s for (s,) in backend.rows("SELECT session_id FROM results WHERE session_id IS NOT NULL")}
    assert kept_results == {f"s{n}" for n in sessions}
    store.close()
