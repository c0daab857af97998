"""Integration fixtures: the real daemon in a subprocess, senders using the real OTel SDK exporters."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.daemon_process import ROOT, DaemonProcess

CORPUS = ROOT / "tests" / "fixtures" / "corpus"
FIXTURE_EVALUATORS = [
    {"module": "tests.integration.evals_fixture:no_tool_errors"},
    {"module": "tests.integration.evals_fixture:matches_expected"},
]


def project_env() -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture
def daemon_factory(tmp_path: Path):
    started: list[DaemonProcess] = []

    def start(overrides: dict | None = None, *, evaluators: list | None = FIXTURE_EVALUATORS) -> DaemonProcess:
        config = dict(overrides or {})
        if evaluators is not None:
            config.setdefault("evaluators", evaluators)
        workdir = tmp_path / f"daemon{len(started)}"
        workdir.mkdir()
        daemon = DaemonProcess(workdir, config, env=project_env())
        started.append(daemon)
        return daemon.start()

    yield start
    for daemon in started:
        daemon.stop()


@pytest.fixture
def certificate(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return key, cert


def send(protocol: str, endpoint: str, *args: str, timeout: float = 120, token: str | None = None) -> str:
    """Run tests/integration/otel_sender.py (the real SDK exporters) in its own process."""
    command = [sys.executable, str(ROOT / "tests" / "integration" / "otel_sender.py"), "--protocol", protocol]
    command += ["--endpoint", endpoint]
    if token:
        command += ["--token", token]
    result = subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **project_env()},
    )
    assert result.returncode == 0, f"sender failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr
