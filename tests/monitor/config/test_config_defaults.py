"""One source of defaults: a component configured from a config section has no default of its own for a key of
that section (the Collector's createDefaultConfig). Its constructor takes the section, or the key without a
default, or a default read from the config model; a literal or a module constant of its own would drift."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator

import pytest

from monitor.config import MonitorConfig
from monitor.config.units import Section
from monitor.engine.assembler import TraceAssembler
from monitor.engine.judge_stage import JudgeStage
from monitor.engine.pairwise_stage import PairwiseStage
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.receivers.grpc_receiver import ExportHandler, GrpcReceiver
from monitor.receivers.http_receiver import HttpReceiver, OtlpHttpHandler
from monitor.receivers.inflight import ReadSlots
from monitor.sessions.book import SessionBook
from monitor.sessions.evaluation import SessionEvaluation
from monitor.sessions.tracker import SessionTracker
from monitor.sources.runner import Poller
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.sqlite import ResultStore
from tests.support.sink import TracesSink

COMPONENTS = (
    GrpcReceiver,
    ExportHandler,
    ReadSlots,
    HttpReceiver,
    OtlpHttpHandler,
    TraceAssembler,
    TraceEvaluator,
    JudgeStage,
    PairwiseStage,
    Poller,
    ResultStore,
    PostgresResultStore,
    SessionBook,
    SessionEvaluation,
    SessionTracker,
)
# constructor parameters named otherwise than their config key
ALIASES = {"timeout_seconds": "timeout", "idle_timeout": "read_idle_timeout", "retention_seconds": "retention"}


def _sections(cls: type[Section] = Section) -> Iterator[type[Section]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _sections(sub)


CONFIG_KEYS = {name for section in _sections() for name in section.model_fields}


def _own_default(default: ast.expr) -> bool:
    """A default written in the component: a literal other than None (16 * 1024 * 1024 too) or a bare name (a
    module constant). Reading the config model (`_DEFAULTS.quiet_period`, `Config.model_fields[...]`) is not."""
    if isinstance(default, ast.Constant):
        return default.value is not None
    if isinstance(default, ast.BinOp | ast.UnaryOp):
        arithmetic = ast.BinOp | ast.UnaryOp | ast.Constant | ast.operator | ast.unaryop
        return all(isinstance(node, arithmetic) for node in ast.walk(default))
    return isinstance(default, ast.Name)


def _defaults(cls: type) -> Iterator[tuple[str, ast.expr]]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))  # type: ignore[misc]
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    yield from zip((a.arg for a in positional[len(positional) - len(args.defaults) :]), args.defaults, strict=True)
    yield from ((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None)


def test_the_keys_are_found() -> None:
    assert {"max_message_bytes", "read_timeout", "read_idle_timeout", "max_pending", "quiet_period"} <= CONFIG_KEYS


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
def test_no_component_repeats_a_config_default(component: type) -> None:
    repeated = [
        f"{name}={ast.unparse(default)}"
        for name, default in _defaults(component)
        if ALIASES.get(name, name) in CONFIG_KEYS and _own_default(default)
    ]
    assert not repeated, f"{component.__name__} repeats config defaults: {', '.join(repeated)}"


def test_receivers_of_the_default_section_have_the_default_config() -> None:
    config = MonitorConfig().receivers
    grpc = GrpcReceiver(config, TracesSink())
    assert (grpc.host, grpc.port, grpc.max_message_bytes) == (config.grpc.host, 4317, config.grpc.max_message_bytes)
    assert (grpc.read_timeout, grpc.reads.limit) == (config.read_timeout, config.grpc.max_concurrent_reads)
    assert grpc.inflight.limit_bytes == config.max_inflight_bytes
    http = HttpReceiver(config, TracesSink())
    handler = http.handler
    assert (http.server.host, http.server.port, handler.max_body_bytes) == (config.http.host, 4318, 16 << 20)
    assert (handler.read_timeout, handler.idle_timeout) == (config.read_timeout, config.read_idle_timeout)
    assert handler.inflight.limit_bytes == config.max_inflight_bytes
