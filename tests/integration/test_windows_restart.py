"""A firing in-process alert stays firing across a restart, and the window gauges are continuous: the real daemon,
traces from the real OTel SDK exporter, stopped (SIGTERM, or SIGKILL) and started again on the same data directory.

A quarter of the traces fail (a failing tool call): `no_tool_errors` passes 0.75 of them, under the alert's 0.9,
with `min_samples` 5 and `for` 2s, so scrapes see it pending, then firing. The first scrape of the restarted daemon
shows the alert firing and every window gauge (samples, pass ratio, score quantiles, mean, stddev) as before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import DaemonProcess

pytestmark = pytest.mark.integration

EVALUATOR = "no_tool_errors"
TRACES, FAIL_EVERY = 12, 4  # traces 0, 4 and 8 fail
CONFIG = {
    "evaluators": [
        {
            "module": f"tests.integration.evals_fixture:{EVALUATOR}",
            "alert": {"min_pass_ratio": 0.9, "window": "10m", "for": "2s", "min_samples": 5},
        }
    ],
    "metrics": {"windows": ["5m", "1h"]},
}
CONTINUOUS = (
    "agent_eval_window_samples",
    "agent_eval_pass_ratio",
    "agent_eval_score_quantile",
    "agent_eval_score_mean",
    "agent_eval_score_stddev",
    "agent_eval_alert_active",
)


def _gauges(daemon: DaemonProcess) -> dict[tuple[str, tuple], float]:
    """The window and alert gauges of one scrape."""
    scraped = daemon.metrics()
    return {
        (name, tuple(sorted(labels.items()))): value for name in CONTINUOUS for labels, value in scraped.get(name, [])
    }


def _alert(daemon: DaemonProcess) -> float:
    return daemon.value("agent_eval_alert_active", evaluator=EVALUATOR)


def _stored_verdicts(path: Path) -> int:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as db:
        failing = db.execute("SELECT COUNT(*) FROM results WHERE passed IS NOT NULL").fetchone()[0]
        packed = db.execute("SELECT passed FROM traces WHERE passed IS NOT NULL").fetchall()
    return int(failing) + sum(len(json.loads(text)) for (text,) in packed)


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
def test_a_firing_alert_stays_firing_and_the_pass_ratio_continuous_across_a_restart(tmp_path: Path, stop: str) -> None:
    workdir = tmp_path / "data"
    workdir.mkdir()
    first = DaemonProcess(workdir, CONFIG, env=project_env()).start()
    try:
        send("grpc", f"127.0.0.1:{first.grpc_port}", "synthetic", "--traces", str(TRACES),
             "--fail-every", str(FAIL_EVERY))  # fmt: skip
        samples = first.wait_for("agent_eval_window_samples", TRACES, evaluator=EVALUATOR, window="5m")
        assert samples == TRACES, first.output()
        assert first.wait_for_condition(lambda: _alert(first) == 1, timeout=30), first.output()  # pending, then firing
        before = _gauges(first)
        assert before[("agent_eval_pass_ratio", (("evaluator", EVALUATOR), ("service", "synthetic-agent"),
                                                 ("variant", ""), ("window", "5m")))] == 0.75  # fmt: skip
        store = workdir / "results.db"
        assert first.wait_for_condition(lambda: _stored_verdicts(store) == TRACES, timeout=30)
    finally:
        if stop == "SIGKILL" and first.process is not None:
            first.process.kill()
            first.process.wait(timeout=30)
        first.stop()

    second = DaemonProcess(workdir, CONFIG, env=project_env()).start()  # new ports, the same data directory
    try:
        after = _gauges(second)  # its first scrape
        assert after == before, second.output()
        assert second.value("agent_monitor_window_rebuilds_total", outcome="complete") == 1
        assert second.value("agent_monitor_window_rebuild_results_total") == TRACES
        assert second.value("agent_eval_results_total", evaluator=EVALUATOR) == 0  # counters restart at 0
    finally:
        second.stop()
