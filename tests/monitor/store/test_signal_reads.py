"""Drift's window reads (store/signal_reads.py, through the daemon's review reader: review/drift_reads.py) on both
databases: each aggregate is what a recomputation in Python over the rows written finds, the window is half-open,
the verdicts packed in their trace count with the `results` rows, and the first replica's episode start wins."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.review.of_store import reader_of
from monitor.store import signal_reads
from monitor.store.signal_rows import DriftEpisode, WindowAggregates
from tests.support.backends import Backend
from tests.support.drift_rows import SyntheticSession, SyntheticTrace, create_store, write_sessions, write_traces
from tests.support.store_builders import detail, outcome, row

SERVICES, AGENTS, TOOLS, EVALUATORS = (
    ("shop", "bank"),
    ("", "planner", "critic"),
    ("search", "calc", "mail"),
    ("a", "b"),
)


def _trace(rng: random.Random, at: float) -> SyntheticTrace:
    tools = tuple(rng.sample(TOOLS, rng.randint(0, 2)))
    verdicts = tuple(
        (e, rng.random() < 0.7, rng.choice([None, round(rng.random(), 3)])) for e in EVALUATORS if rng.random() < 0.8
    )
    return SyntheticTrace(
        created_at=at, service=rng.choice(SERVICES), agent=rng.choice(AGENTS), variant=rng.choice(("", "v1", "v2")),
        has_error=rng.random() < 0.2, llm_calls=rng.randint(0, 5), tool_calls=len(tools) + rng.randint(0, 2),
        tool_failures=rng.randint(0, 1), tools=tools, response_chars=rng.choice([None, rng.randint(0, 5000)]),
        tokens=rng.choice([None, rng.randint(0, 10**7)]), cost_usd=rng.choice([None, rng.random()]),
        duration_ms=rng.uniform(1, 60_000), verdicts=verdicts,
    )  # fmt: skip


def _moments(values: list[float]) -> list[float]:
    return [len(values), sum(values), sum(v * v for v in values)]


def expected(traces: list[SyntheticTrace], sessions: list[SyntheticSession], since: float, until: float) -> dict:
    """The aggregates recomputed in Python, as plain lists per key (the shape `_plain` gives the store's)."""
    inside = [t for t in traces if since <= t.created_at < until]
    by_agent: dict[tuple, list[SyntheticTrace]] = defaultdict(list)
    for t in inside:
        by_agent[(t.service, t.agent)].append(t)
    found: dict[str, dict] = {"traces": {}, "tools": defaultdict(int), "results": {}, "sessions": {}, "variants": {}}
    for key, group in by_agent.items():
        present = [[v for t in group if (v := getattr(t, name)) is not None] for name in
                   ("response_chars", "tokens", "cost_usd")]  # fmt: skip
        found["traces"][key] = [
            len(group), sum(t.has_error for t in group), *_moments([t.llm_calls for t in group])[1:],
            *_moments([t.tool_calls for t in group])[1:], sum(t.tool_failures for t in group),
            *(x for values in present for x in _moments(values)), *_moments([t.duration_ms / 1000 for t in group]),
        ]  # fmt: skip
    verdicts: dict[tuple, list] = defaultdict(list)
    variants: dict[tuple, int] = defaultdict(int)
    for t in inside:
        variants[(t.service, t.agent, t.variant)] += 1
        for tool in set(t.tools):
            found["tools"][(t.service, t.agent, tool)] += 1
        for evaluator, passed, score in t.verdicts:
            verdicts[(t.service, t.agent, evaluator)].append((passed, score))
    for key, pairs in verdicts.items():
        scores = [s for _, s in pairs if s is not None]
        found["results"][key] = [len(pairs), sum(p for p, _ in pairs), *_moments(scores)]
    by_ending: dict[tuple, list[int]] = defaultdict(list)
    for s in sessions:
        if since <= s.completed_at < until:
            by_ending[(s.service, s.ended)].append(s.turns)
    found["sessions"] = {key: [len(turns), *_moments(turns)[1:]] for key, turns in by_ending.items()}
    found["variants"] = {key: [n] for key, n in variants.items()}
    found["tools"] = {key: [n] for key, n in found["tools"].items()}
    return found


def _plain(window: WindowAggregates) -> dict:
    keys = {"traces": 2, "tools": 3, "results": 3, "sessions": 2, "variants": 3}
    return {name: {tuple(r[: keys[name]]): list(r[keys[name] :]) for r in getattr(window, name)} for name in keys}


def assert_same(found: WindowAggregates, wanted: dict) -> None:
    plain = _plain(found)
    for name, groups in wanted.items():
        assert plain[name].keys() == groups.keys(), name
        for key, figures in groups.items():
            assert plain[name][key] == pytest.approx(figures, rel=1e-9, abs=1e-9), (name, key)


def _scenario(seed: int, count: int) -> tuple[list[SyntheticTrace], list[SyntheticSession]]:
    rng = random.Random(seed)
    traces = [_trace(rng, 1000.0 + rng.randint(0, 100)) for _ in range(count)]
    sessions = [SyntheticSession(1000.0 + rng.randint(0, 100), rng.choice(SERVICES), rng.choice(("ok", "abandoned")),
                                 rng.randint(1, 9)) for _ in range(count // 4)]  # fmt: skip
    return traces, sessions


def test_the_window_aggregates_are_what_python_finds_over_the_rows(backend: Backend) -> None:
    create_store(backend.location)
    traces, sessions = _scenario(7, 400)
    write_traces(backend.location, traces)
    write_sessions(backend.location, sessions)
    store = backend.store()
    reader = reader_of(store)
    for since, until in ((1000.0, 1101.0), (1020.0, 1050.0), (1050.0, 1050.0), (2000.0, 3000.0)):
        assert_same(reader.drift_window(since, until), expected(traces, sessions, since, until))
    assert_same(reader.drift_window(1000.0, 1101.0, timeout=30.0), expected(traces, sessions, 1000.0, 1101.0))
    store.close()


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32), count=st.integers(0, 60), since=st.integers(990, 1110), span=st.integers(0, 120))
def test_any_window_of_any_rows_aggregates_as_python_does(seed: int, count: int, since: int, span: int) -> None:
    traces, sessions = _scenario(seed, count)
    with tempfile.TemporaryDirectory() as directory:
        path = create_store(Path(directory) / "r.db")
        write_traces(path, traces)
        write_sessions(path, sessions)
        with contextlib.closing(sqlite3.connect(path)) as db:
            found = signal_reads.window_aggregates(db, float(since), float(since + span))
    assert_same(found, expected(traces, sessions, float(since), float(since + span)))


def test_the_window_holds_its_start_and_not_its_end(backend: Backend) -> None:
    create_store(backend.location)
    write_traces(backend.location, [SyntheticTrace(at, "shop", tools=("search",), verdicts=(("a", True, 1.0),))
                                    for at in (99.5, 100.0, 150.0, 200.0)])  # fmt: skip
    write_sessions(backend.location, [SyntheticSession(at, "shop", "ok", 2) for at in (100.0, 200.0)])
    store = backend.store()
    window = reader_of(store).drift_window(100.0, 200.0)
    assert [a.traces for a in window.traces] == [2]
    assert [a.traces for a in window.tools] == [2]
    assert [a.verdicts for a in window.results] == [2]
    assert [a.sessions for a in window.sessions] == [1]
    assert [a.traces for a in window.variants] == [2]
    store.close()


def test_the_verdicts_packed_in_their_trace_count_with_the_results_rows(backend: Backend) -> None:
    """Passing results live in `traces.passed` (`results: all`): a pass ratio counts them; a result naming no agent
    is its trace's agent's."""
    store = backend.store()
    planner = detail(agents=("planner",))
    store.write([outcome("a" * 32, row("rel", True), row("rel", False), row("tox", None, "no_data"), detail=planner),
                 outcome("b" * 32, row("rel", True, agent="critic"), row("tox", True), detail=planner)])  # fmt: skip
    write_traces(backend.location, [SyntheticTrace(0.0, "svc", "planner", verdicts=(("rel", True, 0.5),))],
                 packed=True)  # fmt: skip
    reader = reader_of(store)
    now = float(backend.scalar("SELECT MAX(created_at) FROM traces"))
    found = {(r.agent, r.evaluator): r[3:] for r in reader.drift_window(now - 60, now + 1).results}
    assert found == {("planner", "rel"): (2, 1, 2, 1.0, 1.0), ("critic", "rel"): (1, 1, 1, 1.0, 1.0),
                     ("planner", "tox"): (1, 1, 1, 1.0, 1.0)}  # fmt: skip
    assert [r[3:] for r in reader.drift_window(0.0, 1.0).results] == [(1, 1, 1, 0.5, 0.25)]  # the synthetic one
    store.close()


def test_the_first_replicas_episode_start_wins_and_an_ended_one_goes(backend: Backend) -> None:
    store = backend.store()
    reader, other = reader_of(store), backend.reader()  # two replicas' readers of one store
    first = DriftEpisode("shop", "planner", "pass_ratio", "rel", "down", 100.0)
    tool = DriftEpisode("shop", "planner", "tool_share", "search", "up", 110.0)
    reader.record_drift_episodes([first, tool], [])
    other.record_drift_episodes([first._replace(since=160.0, direction="up")], [])  # seen later by another
    assert reader.drift_episodes() == other.drift_episodes() == [first, tool]
    other.record_drift_episodes([], [("shop", "planner", "tool_share", "search"), ("shop", "x", "y", "z")])
    assert reader.drift_episodes() == [first]
    reader.record_drift_episodes([tool._replace(since=300.0)], [tuple(first[:4])])  # type: ignore[list-item]
    assert reader.drift_episodes() == [tool._replace(since=300.0)]
    other.close()
    store.close()


def test_a_window_read_past_its_timeout_fails_as_unavailable(tmp_path: Path) -> None:
    from monitor.store.health import StoreUnavailable
    from monitor.store.sqlite import ResultStore

    path = create_store(tmp_path / "r.db")
    write_traces(path, _scenario(3, 20_000)[0])
    store = ResultStore(path)
    reader = reader_of(store)
    with pytest.raises(StoreUnavailable):
        reader.drift_window(0.0, 1e12, timeout=0.0)
    assert reader.drift_window(0.0, 1e12).traces  # the connection is usable again, unbounded
    store.close()


def test_a_database_at_the_previous_head_with_rows_is_upgraded_and_read(backend: Backend) -> None:
    """A database the release before left (legacy 9, revision 0010's tables): its rows are kept, the drift tables
    are added empty, and its old results count (by their own agent, else "") beside the new traces'."""
    backend.at_version(9, [outcome("a" * 32, row("rel", False, agent="planner"), row("rel", True))])
    store = backend.store()
    assert backend.scalar("SELECT COUNT(*) FROM trace_signals") == 0
    store.write([outcome("b" * 32, row("rel", False), detail=detail(agents=("planner",)))])
    now = float(backend.scalar("SELECT MAX(created_at) FROM traces"))
    window = reader_of(store).drift_window(now - 3600, now + 1)
    assert [(r.agent, r.verdicts, r.passed) for r in window.results] == [("", 1, 1), ("planner", 2, 0)]
    assert [(a.agent, a.traces) for a in window.traces] == [("planner", 1)]
    store.close()


def test_a_kept_bucket_reads_back_equal_the_first_copy_stays_and_old_ones_go(backend: Backend) -> None:
    store = backend.store()
    create_store(backend.location)
    verdicts = (("rel", True, 0.75),)
    rows = [SyntheticTrace(at, "shop", "planner", tools=("search",), response_chars=90, verdicts=verdicts)
            for at in (10.0, 20.0)]  # fmt: skip
    write_traces(backend.location, rows)
    reader, other = reader_of(store), backend.reader()  # two replicas' readers of one store
    bucket = reader.drift_window(0.0, 300.0)
    assert reader.drift_bucket(0.0, 300.0) is None
    reader.keep_drift_bucket(0.0, 300.0, bucket, before=-1.0)
    other.keep_drift_bucket(0.0, 300.0, WindowAggregates([], [], [], [], []), before=-1.0)  # a second copy
    assert other.drift_bucket(0.0, 300.0) == bucket == reader.drift_bucket(0.0, 300.0)  # the first one, whole
    assert reader.drift_bucket(0.0, 600.0) is None  # another size is another bucket
    other.keep_drift_bucket(900.0, 300.0, bucket, before=600.0)  # keeping one forgets those before `before`
    assert reader.drift_bucket(0.0, 300.0) is None and reader.drift_bucket(900.0, 300.0) == bucket
    other.close()
    store.close()
