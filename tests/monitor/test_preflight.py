"""One preflight for `check-config` and `run`: every config `run` refuses, `check-config` refuses with the
same located message (file:line: field: message, exit 2), and `run` fails before binding, without a traceback."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.commands import check_config
from monitor.config import ConfigError, load_config
from monitor.daemon import Daemon
from monitor.preflight import check_store_path, preflight, store_warnings
from monitor.store.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
# Loopback and port 0 everywhere: should `run` get past the checks, it binds nothing anyone else uses.
LISTENERS = """\
receivers:
  grpc: {host: 127.0.0.1, port: 0}
  http: {host: 127.0.0.1, port: 0}
metrics: {host: 127.0.0.1, port: 0}
store: {path: data/results.db}
"""


def make_pair(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate and its key, made with openssl (as tests/integration/test_tls_health.py does)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = folder / f"{name}.key", folder / f"{name}.crt"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)]
    subprocess.run([*command, "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture
def pairs(tmp_path: Path) -> dict[str, Path]:
    cert, key = make_pair(tmp_path, "a")
    _, other_key = make_pair(tmp_path, "b")
    return {"CERT": cert, "KEY": key, "OTHER_KEY": other_key}


# (name, evaluators/receivers YAML added to LISTENERS, line, field, part of the message)
BAD = [
    (
        "unknown builtin",
        "evaluators:\n  - name: latency\n  - name: no_such_evaluator\n",
        8,
        "evaluators[1].name",
        "unknown builtin evaluator 'no_such_evaluator'",
    ),
    (
        "unimportable module",
        "evaluators:\n  - module: no_such_pkg_xyz.checks:tone\n",
        7,
        "evaluators[0].module",
        "cannot import evaluator module 'no_such_pkg_xyz.checks'",
    ),
    (
        "unknown param",
        "evaluators:\n  - name: latency\n    params:\n      max_ms: 5\n",
        9,
        "evaluators[0].params.max_ms",
        "latency: unknown param 'max_ms'",
    ),
    (
        "ill-typed param",
        "evaluators:\n  - name: latency\n    params:\n      decay: 1\n      max_latency_ms: fast\n",
        10,
        "evaluators[0].params.max_latency_ms",
        "param 'max_latency_ms' must be",
    ),
    (
        "unknown param in the mapping form",
        "evaluators:\n  override:\n    latency: {threshold: 0.5}\n  add:\n    - name: prohibited_content\n"
        "      params: {nope: 1}\n",
        11,
        "evaluators.add[0].params.nope",
        "prohibited_content: unknown param 'nope'",
    ),
    (
        "ill-typed param in an override",
        "evaluators:\n  override:\n    token_budget:\n      params: {max_tokens: lots}\n",
        9,
        "evaluators.override.token_budget.params.max_tokens",
        "param 'max_tokens' must be an int",
    ),
    (
        "swapped cert and key",
        "  tls: {cert_file: KEY, key_file: CERT}\n",
        4,
        "receivers.tls.cert_file",
        "are cert_file and key_file swapped?",
    ),
    (
        "mismatched key",
        "  tls:\n    key_file: OTHER_KEY\n    cert_file: CERT\n",
        6,
        "receivers.tls.cert_file",
        "do not form a TLS pair",
    ),
    (
        "swapped cert and key on the API port",
        "api:\n  tls: {cert_file: KEY, key_file: CERT}\n",
        7,
        "api.tls.cert_file",
        "are cert_file and key_file swapped?",
    ),
    (
        "store path under a file",
        "store: {path: not_a_dir/results.db}\n",
        5,
        "store.path",
        "not_a_dir is not a directory",
    ),
]


def write_config(tmp_path: Path, extra: str, pairs: dict[str, Path] | None = None) -> Path:
    text = LISTENERS
    if extra.startswith("  tls:"):
        text = text.replace("  http: {host: 127.0.0.1, port: 0}\n", "  http: {host: 127.0.0.1, port: 0}\n" + extra)
    elif extra.startswith("store:"):
        text = text.replace("store: {path: data/results.db}\n", "") + extra
    else:
        text += extra
    for name, path in (pairs or {}).items():
        text = text.replace(f": {name}", f": {path}")
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = check_config.run(argparse.Namespace(path=str(path), no_env=True))
    out, err = capsys.readouterr()
    return code, out, err


def run_daemon(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MONITOR_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", "run", "--config", str(path)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.integration
@pytest.mark.parametrize(("case", "extra", "line", "field", "message"), BAD, ids=[case[0] for case in BAD])
def test_check_config_and_run_refuse_with_the_same_located_message(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    pairs: dict[str, Path],
    case: str,
    extra: str,
    line: int,
    field: str,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # relative paths (store.path) are relative to the working directory, as in run
    (tmp_path / "not_a_dir").write_text("a file")
    path = write_config(tmp_path, extra, pairs)
    load_config(path, env={})  # the file itself is well-formed: preflight is what refuses it
    code, out, err = check(path, capsys)
    assert (code, out) == (2, "")
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:{line}: {field}: ") and message in first, err
    assert err.splitlines()[-1] == f"{path}: invalid (1 problem)"

    result = run_daemon(path, tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr == err


@pytest.mark.integration
def test_every_problem_is_reported_at_once(tmp_path: Path, pairs: dict[str, Path]) -> None:
    extra = "evaluators:\n  - name: no_such_evaluator\n  - name: latency\n    params: {max_ms: 5}\n"
    text = LISTENERS.replace("  http:", "  tls: {cert_file: KEY, key_file: CERT}\n  http:") + extra
    for name, file in pairs.items():
        text = text.replace(f": {name}", f": {file}")
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    config = load_config(path, env={})
    with pytest.raises(ConfigError) as caught:
        Daemon(config)  # without a preflight of its own, the daemon runs one: the same refusal, unlocated
    assert [p.split(": ")[:2] for p in caught.value.problems] == [
        ["config", "evaluators[0].name"],
        ["config", "evaluators[1].params.max_ms"],
        ["config", "receivers.tls.cert_file"],
    ]


@pytest.mark.integration
def test_a_good_config_with_tls_passes_and_prepares_the_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pairs: dict[str, Path]
) -> None:
    path = write_config(tmp_path, "  tls: {cert_file: CERT, key_file: KEY}\n", pairs)
    code, out, err = check(path, capsys)
    assert (code, err) == (0, "") and out.startswith(f"{path}: OK\n")
    prepared = preflight(load_config(path, env={}))
    assert prepared.receivers_tls is not None and b"BEGIN CERTIFICATE" in prepared.receivers_tls.cert
    assert prepared.receivers_tls.ssl_context() is not None
    assert {c.label for c in prepared.evaluators} >= {"latency", "error_free"}


def test_store_path_checks_create_nothing(tmp_path: Path) -> None:
    assert check_store_path(str(tmp_path / "new" / "deeper" / "results.db")) == []
    assert not (tmp_path / "new").exists()
    assert check_store_path(str(tmp_path)) == [f"{tmp_path} is a directory"]
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database, just some bytes that sqlite will refuse" * 10)
    assert check_store_path(str(garbage)) == []  # not a config error: the daemon starts without the store
    (warning,) = store_warnings(str(garbage))
    assert "cannot be opened as a SQLite database" in warning
    assert check_store_path(":memory:") == [] and store_warnings(str(tmp_path / "new" / "results.db")) == []
    assert not (tmp_path / "new").exists()


def test_a_store_from_a_newer_release_is_a_config_error_and_a_corrupt_one_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    with sqlite3.connect(tmp_path / "data" / "results.db") as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    path = write_config(tmp_path, "")
    code, _, err = check(path, capsys)
    assert code == 2 and f"store.path: data/results.db has result store schema version {SCHEMA_VERSION + 1}" in err
    (tmp_path / "data" / "results.db").write_bytes(b"garbage, not a database" * 100)
    code, out, err = check(path, capsys)
    assert code == 0 and out.startswith(f"{path}: OK")
    assert f"{path}: warning: store.path: data/results.db cannot be opened as a SQLite database" in err


@pytest.mark.integration
@pytest.mark.parametrize("listener", ["grpc", "http", "metrics"])
def test_a_port_in_use_stops_run_with_one_line_and_no_traceback(tmp_path: Path, listener: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = {"grpc": 0, "http": 0, "metrics": 0, listener: port}
        path = tmp_path / "config.yaml"
        path.write_text(
            "receivers:\n"
            f"  grpc: {{host: 127.0.0.1, port: {ports['grpc']}}}\n"
            f"  http: {{host: 127.0.0.1, port: {ports['http']}}}\n"
            f"metrics: {{host: 127.0.0.1, port: {ports['metrics']}}}\n"
            "store: {path: data/results.db}\n",
            encoding="utf-8",
        )
        result = run_daemon(path, tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("agent-monitor: cannot start: ") and str(port) in last, result.stderr
