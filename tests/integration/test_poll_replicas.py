"""Two real daemons with the same `otlp_files` source on one PostgreSQL store: one polls it at a time, so each
trace is evaluated and stored once; when the poller is killed (SIGKILL) or stuck (SIGSTOP, past `poll_lease`) the
other takes the source over and goes on from its checkpoint."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess, replicas
from tests.support.otlp_json import corpus_traces, otlp_document

pytestmark = pytest.mark.integration
FIRST = ("oi_openai__tool_agent", "otel_genai__tool_error", "adk_native__tool_agent", "strands__tool_agent")
LATER = ("tl_openai__tool_agent", "vercel_ai__tool_agent", "pydantic_ai__tool_agent", "oi_langchain__tool_agent")
EVALUATED = "agent_monitor_traces_evaluated_total"


def _lines(*scenarios: str) -> str:
    return "".join(json.dumps(otlp_document(spans)) + "\n" for spans in corpus_traces(*scenarios).values())


def _stored(url: str) -> tuple[int, int]:
    """(result rows, traces they name) in the shared store (a trace evaluated twice has two rows)."""
    with psycopg.connect(url) as db:
        row = db.execute("SELECT count(*), count(DISTINCT trace_id) FROM results").fetchone()
    assert row is not None
    return row[0], row[1]


def _replicas(tmp_path: Path, url: str) -> tuple[Path, list[DaemonProcess]]:
    directory = tmp_path / "otelcol"
    directory.mkdir()
    source = {"type": "otlp_files", "name": "files", "directory": str(directory), "pattern": "*.json",
              "interval": "0.5s"}  # fmt: skip
    config = {
        "sources": [source],
        "evaluators": [{"name": "latency", "params": {"max_latency_ms": 0}}],  # fails: a stored row per evaluation
        "store": {"url": url, "poll_lease": "3s"},
        "evaluation": {"workers": 1},
    }
    return directory / "traces.json", replicas(tmp_path, config, env=project_env())


def _leader(daemons: list[DaemonProcess]) -> tuple[DaemonProcess, DaemonProcess]:
    """(the daemon that polls the source, the other), once exactly one does."""
    assert daemons[0].wait_for_condition(
        lambda: sorted(d.value("agent_monitor_poll_leader", source="files") for d in daemons) == [0, 1], timeout=30
    ), [d.output()[-2000:] for d in daemons]
    first, second = daemons
    return (first, second) if first.value("agent_monitor_poll_leader", source="files") == 1 else (second, first)


def _total(daemons: list[DaemonProcess]) -> float:
    return sum(d.value(EVALUATED) for d in daemons)


def _settled(poller: DaemonProcess, runs: int = 3) -> None:
    """`runs` more good runs of the poller (nothing left to read)."""
    done = poller.value("agent_monitor_poll_runs_total", source="files", status="ok")
    assert poller.wait_for_condition(
        lambda: poller.value("agent_monitor_poll_runs_total", source="files", status="ok") >= done + runs, timeout=30
    )


@pytest.mark.parametrize("how", ["killed", "stuck"])
def test_one_replica_polls_a_source_and_the_other_takes_it_over(tmp_path: Path, postgres_url: str, how: str) -> None:
    active, daemons = _replicas(tmp_path, postgres_url)
    for daemon in daemons:
        daemon.launch()
    try:
        for daemon in daemons:
            daemon.wait_ready()
        runs = lambda: sum(d.value("agent_monitor_poll_runs_total", source="files") for d in daemons)  # noqa: E731
        assert daemons[0].wait_for_condition(lambda: runs() >= 3)  # every replica that polls has started
        active.write_text(_lines(*FIRST))
        assert daemons[0].wait_for_condition(lambda: _total(daemons) >= 4)
        for daemon in daemons:
            if daemon.value("agent_monitor_poll_runs_total", source="files"):
                _settled(daemon)  # every replica that polls has read all there is
        assert _total(daemons) == 4  # each trace once
        assert daemons[0].wait_for_condition(lambda: _stored(postgres_url) == (4, 4)), _stored(postgres_url)
        poller, other = _leader(daemons)
        assert (poller.value(EVALUATED), other.value(EVALUATED)) == (4, 0)  # by the poller
        assert other.value("agent_monitor_poll_runs_total", source="files") == 0

        assert poller.process is not None
        poller.process.send_signal(signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        with active.open("a") as out:
            out.write(_lines(*LATER))
        assert other.wait_for_condition(lambda: other.value("agent_monitor_poll_leader", source="files") == 1)
        assert other.wait_for(EVALUATED, 4, timeout=30) == 4  # the new ones only: from the checkpoint
        _settled(other)
        assert other.value(EVALUATED) == 4
        assert other.wait_for_condition(lambda: _stored(postgres_url) == (8, 8)), _stored(postgres_url)

        if how == "stuck":  # it wakes up, finds its lease gone and leaves the source to the other
            poller.process.send_signal(signal.SIGCONT)
            assert poller.wait_for_condition(
                lambda: poller.value("agent_monitor_poll_leader", source="files") == 0, timeout=30
            )
            _settled(other)
            assert (poller.value(EVALUATED), other.value(EVALUATED)) == (4, 4)
            assert poller.value("agent_monitor_poll_leader", source="files") == 0
            assert poller.value("agent_monitor_poll_errors_total", source="files") == 0  # losing it is no failure
            assert _stored(postgres_url) == (8, 8)
    finally:
        for daemon in daemons:
            if daemon.process is not None and how == "stuck":
                daemon.process.send_signal(signal.SIGCONT)
            daemon.stop()
