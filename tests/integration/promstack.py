"""Real Prometheus and Alertmanager servers (Debian packages) on loopback, for the integration tests."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.ports import free_port

MAKE_HINT = "`make test` installs the Debian packages prometheus and prometheus-alertmanager"


def binary(*names: str) -> str:
    """The first of `names` on PATH; the test fails (not skips) when none is: `make test` installs them."""
    for name in names:
        if path := shutil.which(name):
            return path
    pytest.fail(f"none of {', '.join(names)} is installed: {MAKE_HINT}")


def wait_ready(port: int, log: Path, what: str, path: str = "/-/ready", timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not become ready:\n" + log.read_text(errors="replace")[-4000:])


def scrape_config(target_port: int, job: str = "agent-monitor", interval: str = "1s") -> str:
    return (
        f"global: {{scrape_interval: {interval}, evaluation_interval: {interval}}}\n"
        "scrape_configs:\n"
        f"  - job_name: {job}\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{target_port}']}}]\n"
    )


class ServerSet:
    """Processes started by a test, stopped at teardown."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.processes: list[subprocess.Popen[bytes]] = []

    def _start(self, name: str, config_name: str, config_text: str, command: list[str]) -> int:
        """Write the config into the server's own folder, start `command` + its listen address, wait until ready."""
        port = free_port()
        home = self.directory / name
        home.mkdir(exist_ok=True)
        (home / config_name).write_text(config_text)
        log = home / f"{name}.log"
        self.processes.append(
            subprocess.Popen(
                [*command, f"--config.file={home / config_name}", f"--web.listen-address=127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL,
                stderr=log.open("wb"),
                cwd=home,
            )
        )
        wait_ready(port, log, name)
        return port

    def start_prometheus(self, config_text: str, *, extra_args: tuple[str, ...] = (), name: str = "prometheus") -> int:
        """Start Prometheus with this config (written to a file beside its rule files); returns its port."""
        storage = self.directory / name / "tsdb"
        command = [binary("prometheus"), f"--storage.tsdb.path={storage}", "--log.level=warn", *extra_args]
        return self._start(name, "prometheus.yml", config_text, command)

    def start_alertmanager(self, config_text: str) -> int:
        """Start Alertmanager (no clustering) with this config; returns its port."""
        storage = self.directory / "alertmanager" / "data"
        command = [
            binary("prometheus-alertmanager", "alertmanager"),
            f"--storage.path={storage}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ]
        return self._start("alertmanager", "alertmanager.yml", config_text, command)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def query(port: int, promql: str, at: float | None = None) -> list[dict[str, Any]]:
    """An instant PromQL query (at the Unix time `at`, or now); fails on a query error."""
    params = {"query": promql} | ({"time": f"{at:.3f}"} if at is not None else {})
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    return body["data"]["result"]


def poll(port: int, promql: str, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 60.0) -> list[dict]:
    """Query until `done(result)` or the timeout; returns the last result."""
    deadline = time.monotonic() + timeout
    result = query(port, promql)
    while not done(result) and time.monotonic() < deadline:
        time.sleep(0.5)
        result = query(port, promql)
    return result
