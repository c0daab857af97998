"""One lifecycle for every component: start(), then shutdown(grace) that is idempotent and safe before start();
the daemon starts its components in dependency order and shuts them down in reverse, within one deadline."""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from monitor.config import GrpcReceiverConfig, HttpReceiverConfig, MonitorConfig, ReceiversConfig
from monitor.config.sessions import SessionsConfig
from monitor.daemon import Daemon
from monitor.engine.assembler import TraceAssembler
from monitor.engine.dispatcher import DueTraceDispatcher
from monitor.engine.drain import PendingTraces
from monitor.engine.ingest import Ingestor
from monitor.engine.judge_stage import JudgeStage
from monitor.engine.pairwise_stage import PairwiseStage
from monitor.engine.pool import EvaluationPool, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.lifecycle import Closing, Component, Grace, Hook, Lifecycle, Part, Together
from monitor.receivers.grpc_receiver import GrpcReceiver
from monitor.receivers.http_receiver import HttpReceiver
from monitor.sessions.evaluation import SessionEvaluation
from monitor.sessions.tracker import SessionTracker
from monitor.sources.scheduler import PollScheduler
from monitor.store.sqlite import ResultStore
from monitor.web.server import WebServer

# The daemon's components in start order (shutdown runs it backwards): a new one is added here and so tested.
DAEMON_PARTS = [
    "windows",
    "drift_first_report",  # before the API too: a restart's first scrape has the stored changes' series
    "event_loop_lag",
    "review_writeback",
    "api",
    "review",
    "store",
    "evaluation_export",  # results out as OTLP logs: closed once the judges, sessions and workers stopped
    "drift",  # reads the store: stops before it
    "attribution",  # the same
    "intake_log",
    "judge_engine",
    "sessions",
    "pool",
    "judgements_resumed",  # the judgements earlier runs kept, submitted again; gives this run's up after the judges
    "judges",
    "pending_traces",
    "dispatcher",
    "polling",
    "intake_replay",
    "http",
    "grpc",
    "intake",
]


def _local_receivers() -> ReceiversConfig:
    return ReceiversConfig(
        grpc=GrpcReceiverConfig(host="127.0.0.1", port=0), http=HttpReceiverConfig(host="127.0.0.1", port=0)
    )


def _ingestor() -> Ingestor:
    return Ingestor(TraceAssembler())


def _pool() -> EvaluationPool:
    return EvaluationPool(thread_slot(TraceEvaluator([])), lambda o: None, lambda r, n: None)


async def _no_judge(judge: Any, request: Any, *, name: str) -> Any:
    raise AssertionError("no judgement expected")


def _pairwise() -> PairwiseStage:
    return PairwiseStage([], {}, _no_judge, lambda tally: None, None, lambda *args: None)


def _daemon(tmp: Path) -> Daemon:
    config = MonitorConfig.model_validate(
        {
            "receivers": {"grpc": {"host": "127.0.0.1", "port": 0}, "http": {"host": "127.0.0.1", "port": 0}},
            "metrics": {"host": "127.0.0.1", "port": 0},
            "store": {"path": str(tmp / "results.db")},
            "evaluation": {"workers": 1},
            "intake": {"wal": {"enabled": True}},  # its log and replay are components too
            # the evaluation exporter is one too (nothing listens there: nothing is sent either)
            "export": {"evaluations": {"enabled": True, "endpoint": "http://127.0.0.1:9"}},
        }
    )
    return Daemon(config)


async def _closed() -> None:
    return None


# Components built on their own, with the daemon itself (each also sits in DAEMON_PARTS, or inside one of them).
STANDALONE: dict[str, Callable[[Path], Component]] = {
    "grpc_receiver": lambda tmp: GrpcReceiver(_local_receivers(), _ingestor()),
    "http_receiver": lambda tmp: HttpReceiver(_local_receivers(), _ingestor()),
    "web_server": lambda tmp: WebServer(web.Application(), "127.0.0.1", 0, name="api"),
    "evaluation_pool": lambda tmp: _pool(),
    "result_store": lambda tmp: ResultStore(tmp / "results.db"),
    "dispatcher": lambda tmp: DueTraceDispatcher(TraceAssembler(), _pool()),
    "pending_traces": lambda tmp: PendingTraces(TraceAssembler(), _pool(), lambda r, n: None),
    "judge_stage": lambda tmp: JudgeStage({}, _no_judge, lambda tally: None),
    "pairwise_stage": lambda tmp: _pairwise(),
    "poll_scheduler": lambda tmp: PollScheduler([]),
    "together": lambda tmp: Together(JudgeStage({}, _no_judge, lambda tally: None), _pairwise()),
    "closing": lambda tmp: Closing(_closed),
    "hook": lambda tmp: Hook(lambda: None),
    "session_tracker": lambda tmp: SessionTracker(SessionsConfig(), SessionEvaluation([]), lambda tally: None),
    "daemon": _daemon,
}


async def _safe_before_start_and_twice(build: Callable[[Path], Component], tmp: Path) -> None:
    never_started = build(tmp / "a")
    assert isinstance(never_started, Component)
    await asyncio.wait_for(never_started.shutdown(0.5), 10)
    await asyncio.wait_for(never_started.shutdown(0.5), 10)
    component = build(tmp / "b")
    await asyncio.wait_for(component.start(), 30)
    await asyncio.wait_for(component.shutdown(0.5), 30)
    await asyncio.wait_for(component.shutdown(0.5), 10)


def _dirs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(STANDALONE))
def test_shutdown_is_safe_before_start_and_idempotent_after(name: str, tmp_path: Path) -> None:
    _dirs(tmp_path)
    asyncio.run(_safe_before_start_and_twice(STANDALONE[name], tmp_path))


@pytest.mark.integration
@pytest.mark.parametrize("name", DAEMON_PARTS)
def test_every_daemon_component_is_safe_before_start_and_idempotent_after(name: str, tmp_path: Path) -> None:
    """Each of the daemon's own components (as it wired them), on its own; the daemon then releases the rest."""
    daemons: list[Daemon] = []

    def build(tmp: Path) -> Component:
        daemons.append(_daemon(tmp))
        return daemons[-1].lifecycle.components[name]

    async def scenario() -> None:
        try:
            await _safe_before_start_and_twice(build, tmp_path)
        finally:
            for daemon in daemons:
                await daemon.shutdown(0.5)

    _dirs(tmp_path)
    asyncio.run(scenario())


def test_the_daemon_starts_its_components_in_dependency_order(tmp_path: Path) -> None:
    daemon = _daemon(tmp_path)
    assert [part.name for part in daemon.lifecycle.parts] == DAEMON_PARTS
    assert all(isinstance(part.component, Component) for part in daemon.lifecycle.parts)
    asyncio.run(daemon.shutdown(0.5))


class _Recorded:
    """A component that writes what happens to it into a shared log; `fail` makes its start raise."""

    def __init__(self, name: str, log: list[tuple[str, str, float]], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    async def start(self) -> None:
        if self.fail:
            raise OSError(f"{self.name} cannot start")
        self.log.append(("start", self.name, 0.0))

    async def shutdown(self, grace: float) -> None:
        self.log.append(("shutdown", self.name, grace))


def test_a_lifecycle_starts_in_order_and_shuts_down_in_reverse_with_each_ones_grace() -> None:
    log: list[tuple[str, str, float]] = []
    lifecycle = Lifecycle(
        [
            Part("last", _Recorded("last", log), Grace.fixed(0.5)),
            Part("floor", _Recorded("floor", log), Grace(floor=1.0)),
            Part("left", _Recorded("left", log)),
            Part("share", _Recorded("share", log), Grace(share=0.25, cap=2.0)),
        ]
    )

    async def scenario() -> None:
        await lifecycle.start()
        await lifecycle.shutdown(4.0)
        await lifecycle.shutdown(4.0)  # once only

    asyncio.run(scenario())
    assert [(what, name) for what, name, _ in log] == [
        ("start", "last"),
        ("start", "floor"),
        ("start", "left"),
        ("start", "share"),
        ("shutdown", "share"),
        ("shutdown", "left"),
        ("shutdown", "floor"),
        ("shutdown", "last"),
    ]
    graces = {name: grace for what, name, grace in log if what == "shutdown"}
    assert graces["share"] == 1.0 and graces["last"] == 0.5
    assert 3.0 < graces["left"] <= 4.0 and graces["floor"] >= 1.0


def test_grace_shares() -> None:
    assert Grace().of(30, -1) == 0.0
    assert Grace(floor=0.1).of(30, -1) == 0.1
    assert Grace(share=0.25, cap=2.0).of(30, 1) == 2.0
    assert Grace(share=0.25, cap=2.0).of(4, 1) == 1.0
    assert Grace.fixed(0.5).of(30, 29) == 0.5
    assert Grace().of(30, math.inf) == math.inf


def test_a_failed_lifecycle_start_shuts_everything_down_in_reverse() -> None:
    log: list[tuple[str, str, float]] = []
    names = ["first", "second", "broken", "never"]
    lifecycle = Lifecycle([Part(name, _Recorded(name, log, fail=name == "broken")) for name in names])

    async def scenario() -> None:
        with pytest.raises(OSError, match="broken cannot start"):
            await lifecycle.start(undo_grace=3.0)

    asyncio.run(scenario())
    assert [(what, name) for what, name, _ in log] == [
        ("start", "first"),
        ("start", "second"),
        ("shutdown", "never"),  # safe before start: it releases what its constructor holds
        ("shutdown", "broken"),
        ("shutdown", "second"),
        ("shutdown", "first"),
    ]


def test_component_names_are_unique() -> None:
    log: list[tuple[str, str, float]] = []
    with pytest.raises(ValueError, match="unique"):
        Lifecycle([Part("x", _Recorded("x", log)), Part("x", _Recorded("x", log))])


@pytest.mark.integration
def test_a_failed_daemon_start_shuts_down_what_had_started(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy_port = taken.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            api_port = probe.getsockname()[1]
        config = MonitorConfig.model_validate(
            {
                "receivers": {"grpc": {"host": "127.0.0.1", "port": busy_port}, "http": {"enabled": False}},
                "metrics": {"host": "127.0.0.1", "port": api_port},
                "store": {"path": str(tmp_path / "results.db")},
                "evaluation": {"workers": 1},
            }
        )
        daemon = Daemon(config)

        async def scenario() -> None:
            with pytest.raises(OSError):
                await daemon.start()
            await daemon.shutdown(0.5)  # already stopped: nothing more happens

        asyncio.run(scenario())
    assert daemon.api._runner is None and daemon.pool.accepting is False
    assert daemon.dispatcher._task is None and daemon.ingestor.accepting is False
    with socket.socket() as again:  # the API port that had been bound is free again
        again.bind(("127.0.0.1", api_port))


@pytest.mark.integration
def test_the_started_daemon_still_collects_cycles_often(tmp_path: Path) -> None:
    """The main process decodes untrusted requests: a malformed one leaves a cycle holding its bytes, so the
    young generation must keep its default threshold there (raised, a 16 MB malformed flood held over 1 GB)."""
    import gc

    before = gc.get_threshold()
    daemon = _daemon(tmp_path)

    async def scenario() -> tuple[int, int, int]:
        await daemon.start()
        try:
            return gc.get_threshold()
        finally:
            await daemon.shutdown(0.5)

    try:
        assert asyncio.run(scenario())[0] <= 1000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
