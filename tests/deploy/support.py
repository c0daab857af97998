"""Shared by the deploy tests: paths, the daemon config they are checked against, the external checkers."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config.loader import load_config
from monitor.config.models import MonitorConfig

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
KUBE_DIR = DEPLOY / "kubernetes"
MONITOR_YAML = DEPLOY / "monitor.yaml"

MAKE_HINT = "`make test` installs it (pyproject dev extras, or the Debian packages prometheus/prometheus-alertmanager)"


@cache
def monitor_config() -> MonitorConfig:
    """deploy/monitor.yaml as the daemon loads it (defaults filled in), without the test runner's environment."""
    return load_config(MONITOR_YAML, env={})


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_all_yaml(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def tool(name: str) -> str:
    """An executable from the project's venv (beside this Python), else from PATH; the test fails when missing."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    if found := shutil.which(name):
        return found
    pytest.fail(f"{name} is not installed: {MAKE_HINT}")


def run(*args: str | Path, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def host_port(endpoint: str) -> tuple[str, int]:
    """'host:port' (optionally with a scheme) -> (host, port)."""
    endpoint = endpoint.split("://", 1)[-1]
    host, _, port = endpoint.rpartition(":")
    return host, int(port)
