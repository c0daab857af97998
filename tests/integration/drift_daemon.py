"""What the drift daemon tests share (test_drift_daemon.py, test_drift_replicas.py): a compressed-time `drift`
section, a stationary history written straight into the store at past times for the agent the real OTel SDK
sender's traces name, failing traces sent through that sender, and the drift series read back from /metrics.

Time is compressed 480-fold: a "day" (`period`) is 180 s, the recent window 36 s, three "days" of same-hours
baseline. The history is one trace a second (at half seconds), 2 LLM calls and 2 `get_weather` calls each like
the sender's, from `HISTORY_SPAN` seconds before the test up to `HISTORY_GAP` seconds before it, every sixth trace
failed. The job reads the same-hours windows in buckets of 6 s (job.baseline_bucket: a sixth of the recent window),
each of which holds exactly 6 history traces and 1 error: the baseline error rate is 1/6 in every report of the
test's first `STEADY` seconds, however the windows fall on the buckets, and the recent window holds none of the
history.
"""

from __future__ import annotations

import math
import time

from tests.integration.conftest import send
from tests.integration.daemon_process import DaemonProcess
from tests.support.drift_rows import SyntheticTrace, write_traces

SERVICE = "drift-e2e"
AGENT = "travel_agent"  # the sender's `invoke_agent travel_agent` span (gen_ai.agent.name): trace_signals.agent
DRIFT = {
    "recent": "36s",
    "period": "180s",
    "baseline": "540s",
    "trailing": "120s",
    "interval": "2s",
    "settle": 1,
    "min_samples": 20,
}
HISTORY_SPAN = 600.0  # seconds of history before the test: the third "day" (same hours) of every report
HISTORY_GAP = 45.0  # none in the last 45 s: the recent window (36 s) of every report of the test is the sender's
STEADY = 135.0  # seconds after the history is written during which the first same-hours window is all history
FAIL_EVERY = 6
BASELINE_ERROR_RATE = 1 / FAIL_EVERY
FAILING_TRACES = 40


def history(now: float) -> list[SyntheticTrace]:
    """The stationary history before `now`: a trace each second at half seconds, every sixth failed."""
    start = math.floor(now) - HISTORY_SPAN
    rows = []
    for i in range(int(HISTORY_SPAN - HISTORY_GAP)):
        rows.append(
            SyntheticTrace(
                created_at=start + i + 0.5,
                service=SERVICE,
                agent=AGENT,
                has_error=i % FAIL_EVERY == 0,
                llm_calls=2,
                tool_calls=2,
                tool_failures=2 if i % FAIL_EVERY == 0 else 0,
                tools=("get_weather",),
                response_chars=21,  # "It is sunny in Paris."
                tokens=241,
                duration_ms=5.0,
            )
        )
    return rows


def write_history(store: str) -> int:
    return write_traces(store, history(time.time()))


def send_failing(daemon: DaemonProcess, traces: int = FAILING_TRACES) -> None:
    """`traces` traces of SERVICE's travel_agent through the real OTLP gRPC exporter, every one's tool calls
    failing (status ERROR)."""
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", str(traces), "--fail-every", "1",
         "--service", SERVICE)  # fmt: skip


def drift_config(store: dict) -> dict:
    return {"drift": DRIFT, "store": store, "evaluators": [{"name": "error_free"}]}


Series = dict[str, float]


def error_rate_series(daemon: DaemonProcess) -> Series:
    """The error rate's drift series of SERVICE/AGENT in one scrape, by family (`agent_quality_drift` as
    `..._up` and `..._down`), with the report's time."""
    scraped = daemon.metrics()
    found: Series = {}
    mine = {"service": SERVICE, "agent": AGENT, "signal": "error_rate", "subject": ""}
    for name, samples in scraped.items():
        for labels, value in samples:
            if name.startswith("agent_quality_") and all(labels.get(k) == v for k, v in mine.items()):
                suffix = f"_{labels['direction']}" if name == "agent_quality_drift" else ""
                suffix += f"_{labels['window']}" if name == "agent_quality_samples" else ""
                found[name + suffix] = value
                if name == "agent_quality_drift_active":
                    assert labels["kind"] == "quality", labels
                if name == "agent_quality_baseline":
                    found["baseline_kind_same_hours"] = float(labels["baseline"] == "same_hours")
    for _, value in scraped.get("agent_monitor_drift_report_timestamp_seconds", []):
        found["as_of"] = value
    return found


def drift_samples(daemon: DaemonProcess) -> tuple[float, dict[tuple, float]]:
    """One scrape's report time and every agent_quality_* sample of SERVICE/AGENT, by (name, labels)."""
    scraped = daemon.metrics()
    (as_of,) = [value for _, value in scraped.get("agent_monitor_drift_report_timestamp_seconds", [])]
    found = {
        (name, tuple(sorted(labels.items()))): value
        for name, samples in scraped.items()
        if name.startswith("agent_quality_")
        for labels, value in samples
        if labels.get("service") == SERVICE and labels.get("agent") == AGENT
    }
    return as_of, found


def active(series: Series) -> bool:
    return series.get("agent_quality_drift_active") == 1.0


def wait_for_drift(daemon: DaemonProcess, timeout: float = 20.0) -> Series:
    """The error rate's series once its change is active (failing the test past `timeout`)."""
    seen: list[Series] = [{}]

    def drifted() -> bool:
        seen[0] = error_rate_series(daemon)
        return active(seen[0])

    daemon.wait_until(drifted, f"error_rate drift active (last seen {seen[0]})", timeout=timeout)
    return seen[0]


# --- a change under the default `drift` section (recent 30 min, the same hours of the previous days) -------------
CHANGED_SERVICE = "drift-history"  # no trace the tests send names it


def default_config_change(now: float) -> list[SyntheticTrace]:
    """Rows that make the daemon's first report under the default drift config (any `interval` up to 10 min)
    hold an active error rate change of CHANGED_SERVICE's planner for the next 10 minutes: 60 traces a day ago
    in the recent window's hours (3 failed), 60 in the recent window (50 failed), all between 20 and 7 minutes
    before `now` (the report time is `settle` and up to an interval behind the clock). Every trace calls `search`:
    tool_share's subject makes Prometheus see the `subject` label (an empty one is no label)."""
    rows = []
    planner = {"service": CHANGED_SERVICE, "agent": "planner", "tool_calls": 1, "tools": ("search",)}
    for i in range(60):
        at = now - 1200 + i * 13
        rows.append(SyntheticTrace(created_at=at - 86400, has_error=i % 20 == 0, **planner))  # type: ignore[arg-type]
        rows.append(SyntheticTrace(created_at=at, has_error=i % 6 != 0, **planner))  # type: ignore[arg-type]
    return rows
