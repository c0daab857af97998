"""A real Arize Phoenix server for the tests: `phoenix serve` from its own virtualenv (it pins its own protobuf and
grpcio, so it never goes into the project's), on free loopback ports, with SQLite in a temporary working
directory, no telemetry and no authentication. `make test` creates the virtualenv (`make phoenix-venv`:
.cache/phoenix-venv, arize-phoenix==20.26.1); AGENT_MONITOR_PHOENIX_VENV points elsewhere. Without it the tests
that need it fail with that hint (they are not skipped).

Traces go in as an application sends them: the OpenTelemetry SDK's OTLP/HTTP exporter to `<url>/v1/traces`, with
the resource attribute `openinference.project.name` (Phoenix's project: phoenix/utilities/project.py). Phoenix
ingests asynchronously: `wait_for_spans` polls its API until they are there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult

from evaluators.traces.records import SpanRecord
from tests.conftest import PROJECT_ROOT
from tests.integration.otel_sender import make_exporter, readable
from tests.support.ports import free_port

PHOENIX_VERSION = "20.26.1"
VENV_ENV = "AGENT_MONITOR_PHOENIX_VENV"
MAKE_HINT = f"`make test` installs it (`make phoenix-venv`: arize-phoenix=={PHOENIX_VERSION} in .cache/phoenix-venv)"
START_TIMEOUT = 180.0  # imports, then the database migrations (about 10-30 s on a warm machine)


def phoenix_venv() -> Path:
    return Path(os.environ.get(VENV_ENV) or PROJECT_ROOT / ".cache" / "phoenix-venv")


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@contextlib.contextmanager
def phoenix_server(timeout: float = START_TIMEOUT) -> Iterator[str]:
    """Start Phoenix, yield its base URL (http://127.0.0.1:<port>), stop it and remove its directory."""
    executable = phoenix_venv() / "bin" / "phoenix"
    if not executable.is_file():
        pytest.fail(f"Arize Phoenix is not installed at {executable}: {MAKE_HINT} (or set ${VENV_ENV})")
    home = Path(tempfile.mkdtemp(prefix="agent-monitor-phoenix-"))
    port, grpc_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PHOENIX_WORKING_DIR=str(home),
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port),  # its default 4317 is the daemon's
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        PHOENIX_ENABLE_AUTH="false",
    )
    log = home / "phoenix.log"
    with log.open("wb") as output:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [str(executable), "serve"], cwd=home, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"phoenix serve exited ({process.returncode}):\n{_tail(log)}")
            with contextlib.suppress(OSError):
                if _get(f"{url}/v1/projects", timeout=2)[0] == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"phoenix serve did not answer within {timeout:g} s:\n{_tail(log)}")
            time.sleep(0.25)
        yield url
    finally:
        _stop(process)
        shutil.rmtree(home, ignore_errors=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


def export(url: str, project: str, spans: Iterable[SpanRecord]) -> None:
    """Send spans with the SDK's OTLP/HTTP exporter, as Phoenix users do, into `project`."""
    readables = [
        readable(replace(s, resource_attributes={**s.resource_attributes, "openinference.project.name": project}))
        for s in spans
    ]
    exporter = make_exporter("http", url, {}, None)
    try:
        assert exporter.export(readables) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def wait_for_spans(url: str, project: str, trace_ids: Iterable[str], count: int, timeout: float = 30.0) -> None:
    """Until Phoenix serves `count` spans of `trace_ids` in `project` (it ingests in the background)."""
    query = urllib.parse.urlencode([("trace_id", t) for t in trace_ids] + [("limit", 1000)])
    where = f"{url}/v1/projects/{urllib.parse.quote(project, safe='')}/spans/otlpv1?{query}"
    deadline = time.monotonic() + timeout
    got = 0
    while time.monotonic() < deadline:
        status, body = _get(where)
        if status == 200 and (got := len(json.loads(body)["data"])) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"Phoenix has {got} of the {count} spans sent to {project} after {timeout:g} s")
