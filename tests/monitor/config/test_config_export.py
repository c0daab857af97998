"""The `export.evaluations` section: defaults, what it requires, and bad values as clear, located errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from monitor.config import ConfigError, load_config


def _problems(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> list[str]:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env or {})
    return caught.value.problems


def test_defaults_export_nothing() -> None:
    section = load_config(env={}).export.evaluations
    assert (section.enabled, section.endpoint, section.protocol, section.results) == (False, None, "grpc", "failing")
    assert (section.timeout, section.queue_size, section.batch_size, section.sample) == (5.0, 10_000, 512, 0.1)
    assert section.insecure


def test_env_overrides_turn_it_on(tmp_path: Path) -> None:
    env = {
        "AGENT_MONITOR_EXPORT__EVALUATIONS__ENABLED": "true",
        "AGENT_MONITOR_EXPORT__EVALUATIONS__ENDPOINT": "https://collector:4317",
        "AGENT_MONITOR_EXPORT__EVALUATIONS__HEADERS": "{authorization: Bearer x}",
        "AGENT_MONITOR_EXPORT__EVALUATIONS__RESULTS": "all",
    }
    section = load_config(env=env).export.evaluations
    assert section.enabled and section.endpoint == "https://collector:4317" and section.results == "all"
    assert section.headers == {"authorization": "Bearer x"}
    assert not section.insecure  # https: TLS by default


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("enabled: true", "export.evaluations.endpoint: required when export.evaluations.enabled is true"),
        ("endpoint: collector:4317", "export.evaluations.endpoint: "),
        ("endpoint: http://collector:99999", "export.evaluations.endpoint: "),
        ("protocol: http", "export.evaluations.protocol: "),
        ("results: some", "export.evaluations.results: "),
        ("sample: 0", "export.evaluations.sample: "),
        ("sample: 1.5", "export.evaluations.sample: "),
        ("queue_size: 0", "export.evaluations.queue_size: "),
        ("timeout: soon", "export.evaluations.timeout: "),
        ("batch_size: 0", "export.evaluations.batch_size: "),
        ("tls: {ca_file: /nonexistent/ca.pem}", "export.evaluations.tls.ca_file: "),
        ("tls: {insecure: true}\n    endpoint: https://collector:4317", "export.evaluations.tls.insecure: "),
        ("endpoints: http://collector:4317", "export.evaluations.endpoints: unknown key"),
    ],
)
def test_bad_values_are_located_errors(tmp_path: Path, yaml: str, expected: str) -> None:
    found = _problems(tmp_path, f"export:\n  evaluations:\n    {yaml}\n")
    assert any(expected in problem for problem in found), found


def test_client_certificate_and_key_go_together(tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("cert")
    found = _problems(tmp_path, f"export:\n  evaluations:\n    tls: {{cert_file: {tmp_path / 'cert.pem'}}}\n")
    assert any("key_file" in problem and "together" in problem for problem in found), found
