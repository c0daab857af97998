"""Two real daemons on one PostgreSQL store, the turns of each recorded conversation split between them (sent
through the real OTel SDK exporter, as a Collector routing by trace id would): every conversation becomes one
session with all its turns in order, evaluated once across the replicas — one `sessions` row, one result per
session-level evaluator, counted once in the two daemons' metrics together."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import replicas
from tests.integration.test_sessions_store import INTERLEAVED, SUPPORT, expected_sessions
from tests.support.otlp_json import corpus_traces, otlp_document

pytestmark = pytest.mark.integration
EVALUATORS = [{"name": "error_free"}, {"module": "tests.support.session_evals:no_handoff"}]


def _split(tmp_path: Path) -> list[Path]:
    """Two corpus directories: the turns of every conversation alternate between them."""
    traces = corpus_traces(SUPPORT.name, INTERLEAVED.name)
    halves: list[list] = [[], []]
    for session in expected_sessions().values():
        for i, trace_id in enumerate(session["trace_ids"]):
            halves[i % 2] += traces[trace_id]
    directories = []
    for n, spans in enumerate(halves):
        directory = tmp_path / f"half{n}"
        directory.mkdir()
        (directory / "traces_0001.json").write_text(json.dumps(otlp_document(spans)))
        directories.append(directory)
    return directories


def _rows(url: str, sql: str) -> list[tuple]:
    try:
        with psycopg.connect(url) as db:
            return db.execute(sql).fetchall()
    except psycopg.errors.UndefinedTable:
        return []


def test_turns_split_between_two_replicas_make_each_session_evaluated_once(tmp_path: Path, postgres_url: str) -> None:
    config = {
        "evaluators": EVALUATORS,
        "sessions": {"idle": "2s"},
        "store": {"url": postgres_url, "results": "all"},
        "evaluation": {"workers": 1},
    }
    daemons = replicas(tmp_path, config, env=project_env())
    try:
        for daemon in daemons:
            daemon.launch()
        for daemon in daemons:
            daemon.wait_ready()
        for daemon, directory in zip(daemons, _split(tmp_path), strict=True):
            send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(directory))
        expected = expected_sessions()
        completed = lambda: sum(  # noqa: E731
            d.value("agent_sessions_completed_total", service=s, ended="idle") for d in daemons for s in _services()
        )
        assert daemons[0].wait_for_condition(lambda: completed() >= len(expected), timeout=60), [
            d.output()[-3000:] for d in daemons
        ]
        a = daemons[0]
        assert a.wait_for_condition(lambda: len(_rows(postgres_url, "SELECT 1 FROM sessions")) == len(expected))
        stored = _rows(postgres_url, "SELECT session_id, turn_count, turns FROM sessions")
        for session_id, turn_count, turns in stored:
            want = expected[session_id]
            assert turn_count == want["turns"]
            assert [t[0] for t in json.loads(turns)] == want["trace_ids"]  # both replicas' turns, in order
        results = _rows(postgres_url, "SELECT session_id, count(*) FROM results WHERE level = 'session' GROUP BY 1")
        assert dict(results) == dict.fromkeys(expected, 1)  # one no_handoff result each
        counted = sum(
            d.value("agent_eval_results_total", evaluator="no_handoff", level="session", service=s, agent="",
                    variant="", outcome=o)
            for d in daemons for s in _services() for o in ("pass", "fail")
        )  # fmt: skip
        assert counted == len(expected)
        assert completed() == len(expected)  # still: nothing claimed twice
        assert sum(d.value("agent_monitor_session_turns_late_total") for d in daemons) == 0
    finally:
        for daemon in daemons:
            daemon.stop()


def _services() -> set[str]:
    """The services the recorded conversations name (their resources' service.name)."""
    return {
        span.resource_attributes.get("service.name", "unknown")
        for spans in corpus_traces(SUPPORT.name, INTERLEAVED.name).values()
        for span in spans
    }
