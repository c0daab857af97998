""" "Where is the daemon" in one place: a fresh daemon on non-default ports (its metrics host the default wildcard,
its store at a path of its own, its API behind a token file) generates alert links to its own port, and every CLI
command that reads it or its store finds both, and the token, from `--config` or $AGENT_MONITOR_CONFIG alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess
from tests.integration.otlp_raw import post, request, span

pytestmark = pytest.mark.integration

TOKEN = "address-test-token"
SERVICE = "address-agent"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PROXY = "https://monitor.example.com/agents"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`agent-monitor ARGS` in `cwd` (which holds no data/results.db), without a token in the environment."""
    environ = {**os.environ, **project_env()}
    environ.pop("AGENT_MONITOR_API_TOKEN", None)
    environ.pop("AGENT_MONITOR_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**environ, **(env or {})},
        check=False,
    )


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """The default evaluators (error_free alerts by default) on the wildcard host, with one failing trace stored."""
    workdir = tmp_path_factory.mktemp("address")
    token_file = workdir / "api-token"
    token_file.write_text(TOKEN + "\n")
    overrides = {
        "metrics": {"host": "0.0.0.0"},
        "store": {"path": str(workdir / "elsewhere" / "agents.db")},
        "api": {"auth": {"bearer_token_file": str(token_file)}},
    }
    with DaemonProcess(workdir, overrides, env=project_env()) as started:
        assert started.metrics_port != 9464
        body = request([span(TRACE, "00f067aa0ba902b7", error=True)], service=SERVICE).SerializeToString()
        assert post(started.http_port, body)[0] == 200
        stored = lambda: TRACE.encode() in started.get("/api/v1/results?outcome=fail&since=1d", AUTH)[1]  # noqa: E731
        assert started.wait_for_condition(stored, timeout=60), started.output()[-3000:]
        yield started


def links(rules_text: str) -> list[str]:
    groups = yaml.safe_load(rules_text)["groups"]
    return [
        r["annotations"]["failing_traces_url"]
        for g in groups
        for r in g["rules"]
        if "failing_traces_url" in r.get("annotations", {})
    ]


def opened(link: str) -> int:
    """Follow an alert's link as a browser would (its Go templates filled in as Prometheus would): the status."""
    filled = link.replace("{{ $labels.service | urlquery }}", urllib.parse.quote(SERVICE))
    filled = filled.replace("{{ $labels.evaluator | urlquery }}", "error_free")
    with urllib.request.urlopen(urllib.request.Request(filled, headers=AUTH), timeout=10) as answer:
        return answer.status


def test_a_fresh_daemon_on_other_ports_generates_alert_links_to_its_own_port(daemon: DaemonProcess, tmp_path):
    for args, env in config_ways(daemon):
        done = cli("rules", *args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        found = links(done.stdout)
        base = f"http://localhost:{daemon.metrics_port}"  # the wildcard host, as a browser on this host reaches it
        assert found and all(link.startswith(base + "/review?evaluator=") for link in found), found
        assert "9464" not in done.stdout
        error_free = next(link for link in found if "evaluator=error_free&" in link)
        assert opened(error_free) == 200
    assert f"review page: http://localhost:{daemon.metrics_port}/review" in daemon.output()  # the daemon says so too


def test_behind_a_proxy_the_links_go_to_api_external_url(daemon_factory, tmp_path):
    proxied = daemon_factory({"api": {"external_url": PROXY + "/"}}, evaluators=None)
    done = cli("rules", "--config", str(proxied.config_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = links(done.stdout)
    assert found and all(link.startswith(f"{PROXY}/review?evaluator=") for link in found), found
    assert "localhost" not in done.stdout and str(proxied.metrics_port) not in done.stdout
    assert f"review page: {PROXY}/review" in proxied.output()
    # A proxy that strips /agents forwards the link to a page the daemon serves.
    assert opened(found[0].replace(PROXY, proxied.api_base)) == 200

    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"api": {"external_url": f"{PROXY}?x=1"}}))
    refused = cli("rules", "--config", str(bad), cwd=tmp_path)
    assert refused.returncode == 2 and "api.external_url" in refused.stderr and "invalid (1 problem)" in refused.stderr


def config_ways(daemon: DaemonProcess) -> list[tuple[tuple[str, ...], dict[str, str] | None]]:
    """The two ways to name the config: --config, and $AGENT_MONITOR_CONFIG as `run` reads it."""
    return [(("--config", str(daemon.config_path)), None), ((), {"AGENT_MONITOR_CONFIG": str(daemon.config_path)})]


def test_review_finds_the_daemon_and_its_token_from_the_config(daemon: DaemonProcess, tmp_path):
    for args, env in config_ways(daemon):
        done = cli("review", "--json", "--since", "1d", *args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert [item["trace_id"] for item in json.loads(done.stdout)["items"]] == [TRACE]
        trace = cli("review", "--trace", TRACE, *args, cwd=tmp_path, env=env)
        assert trace.returncode == 0 and SERVICE in trace.stdout, trace.stderr


def test_signatures_find_the_daemon_and_its_token_from_the_config(daemon: DaemonProcess, tmp_path):
    for args, env in config_ways(daemon):
        done = cli("signatures", "--json", "--evaluator", "error_free", *args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
        assert [(s["evaluator"], s["services"]) for s in items] == [("error_free", [SERVICE])], items


def test_dataset_export_finds_the_store_from_the_config(daemon: DaemonProcess, tmp_path):
    assert not (tmp_path / "data").exists()  # the old default, data/results.db here, is not where the store is
    for n, (args, env) in enumerate(config_ways(daemon)):
        output = tmp_path / f"tasks{n}.json"
        done = cli("dataset", "export", "--evaluator", "error_free", "-o", str(output), *args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert [task["task_id"] for task in json.loads(output.read_text())["tasks"]] == [TRACE]


def test_health_finds_the_daemon_from_the_config(daemon: DaemonProcess, tmp_path):
    for args, env in config_ways(daemon):
        assert cli("health", *args, cwd=tmp_path, env=env).returncode == 0
