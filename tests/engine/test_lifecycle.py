"""One lifecycle for every component: start(), then shutdown(grace) that is idempotent and safe before start()."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from monitor.config import MonitorConfig
from monitor.daemon import Daemon
from monitor.engine.assembler import TraceAssembler
from monitor.engine.dispatcher import DueTraceDispatcher
from monitor.engine.ingest import Ingestor
from monitor.engine.judge_stage import JudgeStage
from monitor.engine.pool import EvaluationPool, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from monitor.receivers.grpc_receiver import GrpcReceiver
from monitor.receivers.http_receiver import HttpReceiver
from monitor.store.sqlite import ResultStore
from monitor.web.server import WebServer


def _ingestor() -> Ingestor:
    return Ingestor(TraceAssembler(), MetricsExporter())


def _pool() -> EvaluationPool:
    return EvaluationPool(thread_slot(TraceEvaluator([])), lambda o: None, lambda r, n: None)


async def _no_judge(judge: Any, request: Any, *, name: str) -> Any:
    raise AssertionError("no judgement expected")


def _daemon(tmp: Path) -> Daemon:
    config = MonitorConfig.model_validate(
        {
            "receivers": {"grpc": {"host": "127.0.0.1", "port": 0}, "http": {"host": "127.0.0.1", "port": 0}},
            "metrics": {"host": "127.0.0.1", "port": 0},
            "store": {"path": str(tmp / "results.db")},
            "evaluation": {"workers": 1},
        }
    )
    return Daemon(config)


COMPONENTS: dict[str, Callable[[Path], Any]] = {
    "grpc_receiver": lambda tmp: GrpcReceiver(_ingestor(), "127.0.0.1", 0),
    "http_receiver": lambda tmp: HttpReceiver(_ingestor(), "127.0.0.1", 0, max_body_bytes=1 << 20),
    "web_server": lambda tmp: WebServer(web.Application(), "127.0.0.1", 0, name="api"),
    "evaluation_pool": lambda tmp: _pool(),
    "result_store": lambda tmp: ResultStore(tmp / "results.db"),
    "dispatcher": lambda tmp: DueTraceDispatcher(TraceAssembler(), _pool()),
    "judge_stage": lambda tmp: JudgeStage({}, _no_judge, lambda tally: None),
    "daemon": _daemon,
}


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_shutdown_is_safe_before_start_and_idempotent_after(name: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        never_started = COMPONENTS[name](tmp_path / "a")
        await asyncio.wait_for(never_started.shutdown(0.5), 10)
        await asyncio.wait_for(never_started.shutdown(0.5), 10)
        component = COMPONENTS[name](tmp_path / "b")
        await asyncio.wait_for(component.start(), 30)
        await asyncio.wait_for(component.shutdown(0.5), 30)
        await asyncio.wait_for(component.shutdown(0.5), 10)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    asyncio.run(scenario())


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

        asyncio.run(scenario())
    assert daemon.api._runner is None and daemon.pool.accepting is False
    with socket.socket() as again:  # the API port that had been bound is free again
        again.bind(("127.0.0.1", api_port))


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
