"""Run the real daemon (`python -m monitor.cli run`) in a subprocess on 127.0.0.1 for tests."""

from __future__ import annotations

import os
import signal
import sqlite3
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
ENV_PREFIX = "AGENT_MONITOR_"


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def config_env(config: dict[str, Any], path: tuple[str, ...] = ()) -> dict[str, str]:
    """`config`'s scalar leaves as AGENT_MONITOR_<SECTION>__<FIELD>... variables (the loader's env overrides)."""
    found: dict[str, str] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            found.update(config_env(value, (*path, key)))
        elif isinstance(value, str | int | float | bool) or value is None:
            text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True)
            found[ENV_PREFIX + "__".join((*path, key)).upper()] = text.removesuffix("\n...\n").strip()
        else:
            raise ValueError(f"{'.'.join((*path, key))}: only scalars can be set from the environment")
    return found


def replicas(
    tmp_path: Path, config: dict[str, Any], names: tuple[str, ...] = ("a", "b"), env: dict[str, str] | None = None
) -> list[DaemonProcess]:
    """Daemons (not started) of one config, each in a work directory of its own under `tmp_path` (named `names`):
    the replicas of a shared store."""
    made = []
    for name in names:
        (tmp_path / name).mkdir()
        made.append(DaemonProcess(tmp_path / name, config, env=env))
    return made


def read_store(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of a read-only query on a daemon's SQLite store; none while it is not there or not set up yet."""
    if not path.exists():
        return []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        try:
            return db.execute(sql, params).fetchall()
        except sqlite3.OperationalError:  # not set up yet
            return []


class DaemonProcess:
    """Start with `with DaemonProcess(tmp_path, {...overrides}) as daemon:`; stops with SIGTERM.

    `python`: the interpreter to run (default this one: another tree's venv for an A/B). `config_in_env`: no config
    file; the daemon reads its embedded default config and the settings here as AGENT_MONITOR_* variables (any
    such variable inherited from this process is dropped), so trees whose config files differ run alike.
    """

    def __init__(
        self,
        workdir: Path,
        overrides: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        *,
        python: str | Path | None = None,
        config_in_env: bool = False,
    ):
        self.workdir = workdir
        self.grpc_port, self.http_port, self.metrics_port = free_port(), free_port(), free_port()
        config = {
            "receivers": {
                "grpc": {"host": "127.0.0.1", "port": self.grpc_port},
                "http": {"host": "127.0.0.1", "port": self.http_port},
            },
            "assembly": {"quiet_period": "1s", "max_trace_wait": "20s"},
            "metrics": {"host": "127.0.0.1", "port": self.metrics_port},
            "store": {"path": str(workdir / "results.db")},
            "shutdown": {"grace_period": "10s"},
        }
        _merge(config, overrides or {})
        api_tls = config.get("api", {}).get("tls") or {}
        # With api.tls the metrics port speaks HTTPS: trust its (self-signed) certificate.
        self.api_ssl = ssl.create_default_context(cafile=api_tls["cert_file"]) if api_tls.get("cert_file") else None
        self.api_base = f"{'https' if self.api_ssl else 'http'}://127.0.0.1:{self.metrics_port}"
        self.config_path = workdir / "monitor.yaml"
        self.python = str(python or sys.executable)
        self.config_in_env = config_in_env
        inherited = dict(os.environ)
        if config_in_env:
            inherited = {key: value for key, value in inherited.items() if not key.startswith(ENV_PREFIX)}
            inherited.update(config_env(config))
        else:
            self.config_path.write_text(yaml.safe_dump(config))
        self.env = {**inherited, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.env.pop("GEMINI_API_KEY", None)
        self.env.pop("GOOGLE_API_KEY", None)
        self.log_path = workdir / "daemon.log"
        self.process: subprocess.Popen | None = None

    # --- process ------------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> DaemonProcess:
        return self.launch().wait_ready(timeout)

    def launch(self) -> DaemonProcess:
        """Start the process without waiting for it (several daemons starting together)."""
        self._log = self.log_path.open("wb")
        command = [self.python, "-m", "monitor.cli", "run"]
        if not self.config_in_env:
            command += ["--config", str(self.config_path)]
        self.process = subprocess.Popen(
            command,
            cwd=self.workdir,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self

    def wait_ready(self, timeout: float = 30.0) -> DaemonProcess:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.process.returncode}:\n{self.output()}")
            try:
                if self.get("/readyz")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"daemon not ready within {timeout}s:\n{self.output()}")

    def stop(self, timeout: float = 30.0) -> int:
        process = self.process
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self._log.close()
        return process.returncode

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def write_rules(self, output: Path) -> str:
        """`agent-monitor rules` on the daemon's config, in its own process, into `output`; the rules' text."""
        command = [sys.executable, "-m", "monitor.cli", "rules", "--config", str(self.config_path)]
        result = subprocess.run(
            [*command, "--output", str(output)], capture_output=True, text=True, timeout=60, cwd=ROOT, env=self.env
        )
        assert result.returncode == 0, result.stderr
        return output.read_text()

    def __enter__(self) -> DaemonProcess:
        """Start it, unless it runs already (`with daemon.start(timeout=60):` must not start a second one)."""
        if self.process is not None and self.process.poll() is None:
            return self
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- http ---------------------------------------------------------------------------------
    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        request = urllib.request.Request(f"{self.api_base}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=5, context=self.api_ssl) as response:
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), dict(exc.headers)

    def metrics(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        """Samples by name: [(labels, value)], from the classic text exposition."""
        status, body, _ = self.get("/metrics")
        assert status == 200
        samples: dict[str, list[tuple[dict[str, str], float]]] = {}
        for family in text_string_to_metric_families(body.decode()):
            for sample in family.samples:
                samples.setdefault(sample.name, []).append((sample.labels, sample.value))
        return samples

    def value(self, name: str, **labels: str) -> float:
        """Sum of the samples of `name` whose labels include `labels`."""
        return sum(v for lab, v in self.metrics().get(name, []) if all(lab.get(k) == x for k, x in labels.items()))

    def wait_for_condition(self, condition: Callable[[], bool], timeout: float = 30.0) -> bool:
        """Poll `condition` every 0.2 s until it holds or `timeout` passes; its last answer."""
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.2)
        return condition()

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        """Poll `condition` until it holds; past `timeout`, fail saying `what` did not happen, with the log's tail."""
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"{what}: not within {timeout}s\n{self.output()[-4000:]}"
            time.sleep(0.1)

    def wait_for(self, name: str, expected: float, timeout: float = 30.0, **labels: str) -> float:
        deadline = time.monotonic() + timeout
        value = self.value(name, **labels)
        while value < expected and time.monotonic() < deadline:
            time.sleep(0.2)
            value = self.value(name, **labels)
        return value
