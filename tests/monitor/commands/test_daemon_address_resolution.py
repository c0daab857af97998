"""`api.external_url` and where the CLI finds the daemon, its store and token (monitor/config/address.py,
monitor/commands/daemon_address.py): validation, the derived forms, and the order --url/--store, then the config."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pytest
import yaml

from monitor.alerting.rules import rule_groups
from monitor.cli import main
from monitor.commands.daemon_address import DaemonAddress, InvalidConfig, daemon_address, store_location
from monitor.config import ConfigError, MonitorConfig, load_config
from monitor.config.address import external_url, local_url


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MONITOR_API_TOKEN", raising=False)
    monkeypatch.delenv("AGENT_MONITOR_CONFIG", raising=False)


def config_file(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def config(**sections: dict) -> MonitorConfig:
    """The config of these sections, loaded as `run` loads a file (without the environment's overrides)."""
    with tempfile.TemporaryDirectory() as where:
        return load_config(config_file(Path(where), sections), env={})


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://monitor.example.com/agents/", "https://monitor.example.com/agents"),
        ("  http://10.0.0.5:9100  ", "http://10.0.0.5:9100"),
        ("https://[2001:db8::1]:8443/", "https://[2001:db8::1]:8443"),
        ("", ""),
    ],
)
def test_external_url_is_an_absolute_url_kept_without_its_trailing_slash(given: str, kept: str) -> None:
    assert config(api={"external_url": given}).api.external_url == kept


@pytest.mark.parametrize(
    "bad",
    [
        "monitor.example.com",
        "/agents",
        "ftp://monitor.example.com",
        "https://",
        "https://monitor.example.com/?tab=1",
        "https://monitor.example.com/#top",
        "https://monitor.example.com:99999",
        "https://monitor.example.com/{evaluator}",
    ],
)
def test_external_url_refuses_what_is_not_a_base_url(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"api\.external_url"):
        config(api={"external_url": bad})


def test_the_derived_urls_follow_the_metrics_host_port_and_tls(tmp_path: Path) -> None:
    assert (external_url(config()), local_url(config())) == ("http://localhost:9464", "http://127.0.0.1:9464")
    for host in ("0.0.0.0", "::"):
        wildcard = config(metrics={"host": host, "port": 9100})
        assert (external_url(wildcard), local_url(wildcard)) == ("http://localhost:9100", "http://127.0.0.1:9100")
    specific = config(metrics={"host": "10.0.0.5", "port": 9100})
    assert external_url(specific) == local_url(specific) == "http://10.0.0.5:9100"
    assert local_url(config(metrics={"host": "::1"})) == "http://[::1]:9464"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"  # load time checks only that they exist
    cert.write_text("x")
    key.write_text("x")
    tls = config(metrics={"port": 9443}, api={"tls": {"cert_file": str(cert), "key_file": str(key)}})
    assert (external_url(tls), local_url(tls)) == ("https://localhost:9443", "https://127.0.0.1:9443")
    proxied = config(api={"external_url": "https://monitor.example.com/agents"}, metrics={"port": 9100})
    assert (external_url(proxied), local_url(proxied)) == (
        "https://monitor.example.com/agents",
        "http://127.0.0.1:9100",
    )


def _links(monitor_config) -> dict[str, str]:
    return {
        r["alert"] + ":" + r["labels"].get("evaluator", ""): r["annotations"]["failing_traces_url"]
        for g in rule_groups(monitor_config)
        for r in g["rules"]
        if "failing_traces_url" in r.get("annotations", {})
    }


def test_alert_links_start_with_the_external_url_and_a_template_without_it_is_kept() -> None:
    ported = _links(config(metrics={"port": 9100}))
    assert ported and all(url.startswith("http://localhost:9100/review?evaluator=") for url in ported.values())
    proxied = _links(config(api={"external_url": "https://monitor.example.com/agents/"}))
    assert proxied["AgentEvalPassRatioLow:error_free"] == (
        "https://monitor.example.com/agents/review?evaluator=error_free&service={{ $labels.service | urlquery }}"
        "&since=30m"
    )
    own = "https://ui.example/t?e={evaluator}"  # a user's template without {external_url}: as before
    kept = _links(config(alerting={"traces_url_template": own}, metrics={"port": 9100}))
    assert kept["AgentEvalPassRatioLow:error_free"] == "https://ui.example/t?e=error_free"
    runbook = config(alerting={"runbook_url_template": "{external_url}/docs#{alert}"}, metrics={"port": 9100})
    notes = rule_groups(runbook)[0]["rules"][0]["annotations"]
    assert notes["runbook_url"] == f"http://localhost:9100/docs#{rule_groups(runbook)[0]['rules'][0]['alert']}"


def args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"url": None, "store": None, "token": None, "config": None, **given})


def test_explicit_options_win_and_the_config_fills_in_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-the-config\n")
    path = config_file(
        tmp_path,
        {
            "metrics": {"port": 9100},
            "api": {"auth": {"bearer_token_file": str(token_file)}},
            "store": {"path": "/srv/am/results.db"},
        },
    )
    named = str(path)
    assert daemon_address(args(config=named)) == DaemonAddress("http://127.0.0.1:9100", "from-the-config")
    assert daemon_address(args(config=named, url="https://x:1")) == DaemonAddress("https://x:1", "from-the-config")
    assert daemon_address(args(config=named, token="t")) == DaemonAddress("http://127.0.0.1:9100", "t")
    assert store_location(args(config=named)) == "/srv/am/results.db"
    assert store_location(args(config=named, store="other.db")) == "other.db"
    monkeypatch.setenv("AGENT_MONITOR_API_TOKEN", "from-env")
    assert daemon_address(args(config=named)).token == "from-env"
    monkeypatch.setenv("AGENT_MONITOR_CONFIG", named)
    monkeypatch.setenv("AGENT_MONITOR_STORE__URL", "postgresql://am@db.example:5432/agents")
    assert daemon_address(args()) == DaemonAddress("http://127.0.0.1:9100", "from-env")
    assert store_location(args()) == "postgresql://am@db.example:5432/agents"


def test_with_url_and_token_given_no_config_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = config_file(tmp_path, {"metrics": {"port": -1}})
    monkeypatch.setenv("AGENT_MONITOR_METRICS__PORT", "-2")  # nor the overrides, with no config named
    assert daemon_address(args(url="http://h:1", token="t", config=str(bad))) == DaemonAddress("http://h:1", "t")
    assert daemon_address(args(url="http://h:1")) == DaemonAddress("http://h:1", None)
    with pytest.raises(InvalidConfig):
        daemon_address(args(url="http://h:1", config=str(bad)))
    with pytest.raises(InvalidConfig):
        store_location(args(config=str(bad)))


@pytest.mark.parametrize(
    "command", [["review"], ["signatures"], ["dataset", "export", "-o", "tasks.json"], ["review", "--by", "service"]]
)
def test_an_invalid_config_is_reported_as_check_config_does_with_exit_2(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bad = config_file(tmp_path, {"api": {"external_url": "monitor.example.com"}})
    assert main([*command, "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: api.external_url: must be an absolute" in err, err
    assert f"{bad}: invalid (1 problem)" in err
    assert not (tmp_path / "tasks.json").exists()
