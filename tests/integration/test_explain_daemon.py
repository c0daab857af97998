"""Issue 42's seeded datasets, sent through the daemon's OTLP/gRPC receiver by the real SDK exporter
(seeded_sender.py), each under its own service, then explained by `GET /api/v1/explain` over the stored traces:

- failures concentrated in one value of one dimension among 20 noise dimensions: that value ranks first, its
  lift within 10 % of the true lift (from the generating probabilities);
- concentrated in a combination of two values: the pair ranks first;
- failures spread at random: no significant factor (two seeds here; the 100 seeds of the property run on the
  engine alone, tests/monitor/explain/test_contrast.py, as the daemon adds nothing random to it).

The failing evaluator is `error_free` (a seeded failure is the root span's ERROR status); the noise dimensions are
span attributes named in `explain.dimensions`, the model and tool those of the GenAI spans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse

import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import ROOT, DaemonProcess
from tests.support.seeded_traces import NOISE_DIMENSIONS, seeded_traces

pytestmark = pytest.mark.integration

DATASETS = {  # service: (concentrate, seed, traces)
    "single": ("value", 3, 6000),
    "pair": ("pair", 5, 4000),
    "random-1": ("none", 11, 2000),
    "random-2": ("none", 12, 2000),
}
CONFIG = {
    "explain": {"dimensions": [f"noise{d:02}" for d in range(NOISE_DIMENSIONS)], "attribution": {"enabled": False}},
    "drift": {"enabled": False},
    "assembly": {"quiet_period": "0.5s", "max_trace_wait": "20s"},
}


def _send(endpoint: str, service: str, concentrate: str, seed: int, traces: int) -> None:
    sender = str(ROOT / "tests" / "integration" / "seeded_sender.py")
    command = [sys.executable, sender, "--endpoint", endpoint, "--service", service, "--concentrate", concentrate,
               "--seed", str(seed), "--traces", str(traces)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, **project_env()})
    assert done.returncode == 0, done.stdout + done.stderr


def _explain(daemon, service: str) -> dict:
    query = urllib.parse.urlencode({"evaluator": "error_free", "service": service, "since": "1h"})
    status, body, _ = daemon.get(f"/api/v1/explain?{query}")
    assert status == 200, body[:2000]
    return json.loads(body)


def _cli(daemon, service: str) -> dict:
    """`agent-monitor explain --json` against the running daemon, in its own process."""
    command = [sys.executable, "-m", "monitor.cli", "explain", "--evaluator", "error_free", "--service", service,
               "--since", "1h", "--url", daemon.api_base, "--json"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=daemon.env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _values(factor: dict) -> list[tuple[str, str]]:
    return sorted((v["dimension"], v["value"]) for v in factor["values"])


@pytest.fixture(scope="module")
def explained(tmp_path_factory) -> dict[str, dict]:
    workdir = tmp_path_factory.mktemp("explain-daemon")
    daemon = DaemonProcess(workdir, {**CONFIG, "evaluators": [{"name": "error_free"}]}, env=project_env())
    try:
        daemon.start()
        total = 0
        for service, (concentrate, seed, traces) in DATASETS.items():
            _send(f"127.0.0.1:{daemon.grpc_port}", service, concentrate, seed, traces)
            total += traces
        stored = lambda: all(  # noqa: E731
            (found := _explain(daemon, s))["slice_traces"] + found["reference_traces"] == n
            for s, (_, _, n) in DATASETS.items()
        )
        assert daemon.wait_for_condition(stored, timeout=180), daemon.output()[-3000:]
        assert daemon.value("agent_monitor_traces_evaluated_total") == total
        found = {service: _explain(daemon, service) for service in DATASETS}
        found["cli"] = _cli(daemon, "single")
        yield found
    finally:
        daemon.stop()


def test_failures_in_one_value_among_twenty_noise_dimensions_rank_it_first_with_its_true_lift(explained) -> None:
    found = explained["single"]
    seeded = seeded_traces(3, 6000, "value")
    assert found["slice_traces"] == sum(failed for _, failed in seeded.traces)
    top = found["factors"][0]
    assert _values(top) == [("model", "m0")], found["factors"][:3]
    assert top["lift"] == pytest.approx(seeded.true_lift, rel=0.10), (top, seeded.true_lift)
    assert top["q_value"] <= found["fdr"]
    assert all(not v["dimension"].startswith("noise") for f in found["factors"] for v in f["values"]), found


def test_failures_in_a_combination_of_two_values_rank_the_pair_first(explained) -> None:
    found = explained["pair"]
    top = found["factors"][0]
    assert _values(top) == [("model", "m0"), ("tool", "t0")], found["factors"][:3]
    assert top["coverage"] == 1.0  # every failure has both
    assert top["lift"] == pytest.approx(seeded_traces(5, 4000, "pair").true_lift, rel=0.2)


def test_the_cli_tells_the_same_explanation(explained) -> None:
    cli, api = explained["cli"], explained["single"]
    assert [_values(f) for f in cli["factors"]] == [_values(f) for f in api["factors"]]
    assert (cli["slice_traces"], cli["reference_traces"]) == (api["slice_traces"], api["reference_traces"])


@pytest.mark.parametrize("service", ["random-1", "random-2"])
def test_failures_spread_at_random_have_no_significant_factor(explained, service: str) -> None:
    found = explained[service]
    assert found["slice_traces"] > 50 and found["tested"] > 50
    assert found["factors"] == [], found["factors"]
    assert "no value sets" in found["note"]
