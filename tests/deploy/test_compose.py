"""deploy/compose: the compose file (compose-spec schema, mounts, ports, wiring) and the configs it mounts,
checked by the real tools where they exist here (promtool, amtool) and structurally for the Collector."""

from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from monitor.config import load_config
from monitor.config.units import parse_duration
from tests.deploy import otelcol
from tests.deploy.support import (
    COMPOSE_DIR,
    MONITOR_YAML,
    ROOT,
    host_port,
    load_yaml,
    monitor_config,
    project_version,
    run,
    tool,
)

COMPOSE = COMPOSE_DIR / "compose.yaml"
DAEMON = "agent-monitor"
CONTAINER_CONFIG = "/etc/agent-monitor/monitor.yaml"


def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE)


def services() -> dict[str, Any]:
    return compose()["services"]


def bind_mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(host path as written, container path) of the service's bind mounts (named volumes left out)."""
    mounts = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts.append((volume["source"], volume["target"]))
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            mounts.append((source, target))
    return mounts


def mount_target(service: str, host_path: Path) -> str:
    for source, target in bind_mounts(services()[service]):
        if (COMPOSE_DIR / source).resolve() == host_path.resolve():
            return target
    pytest.fail(f"{service} does not mount {host_path.relative_to(ROOT)}")


def published(service: dict[str, Any]) -> list[int]:
    ports = []
    for port in service.get("ports", []):
        spec = str(port.get("published")) if isinstance(port, dict) else str(port).split("/")[0]
        parts = spec.split(":")
        if isinstance(port, dict) or len(parts) > 1:
            ports.append(int(parts[-2] if len(parts) > 1 else parts[0]))
    return ports


def exposed(service: dict[str, Any]) -> set[int]:
    """Ports other services can reach: `expose` and the container side of `ports`."""
    ports = {int(str(p).split("/")[0]) for p in service.get("expose", [])}
    for port in service.get("ports", []):
        ports.add(int(port["target"]) if isinstance(port, dict) else int(str(port).split("/")[0].split(":")[-1]))
    return ports


def collector_config() -> dict[str, Any]:
    return load_yaml(COMPOSE_DIR / "otelcol.yaml")


# --- the compose file ------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_compose_file_validates_against_the_compose_spec_schema() -> None:
    result = run(tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_schema_check_rejects_a_broken_compose_file(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    broken.write_text(COMPOSE.read_text().replace("    stop_grace_period:", "    stop_grace_periods:"))
    result = run(tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", broken)
    assert result.returncode != 0


def test_the_stack_has_its_services() -> None:
    assert set(services()) == {DAEMON, "otel-collector", "jaeger", "prometheus", "alertmanager", "grafana"}


def test_every_mounted_host_path_exists() -> None:
    missing = []
    for name, service in services().items():
        for source, _ in bind_mounts(service):
            path = (COMPOSE_DIR / source).resolve()
            assert path.is_relative_to(ROOT), f"{name} mounts {source}, outside the repository"
            if not path.exists():
                missing.append(f"{name}: {source}")
    assert not missing, missing


def test_published_host_ports_do_not_collide() -> None:
    ports = [port for service in services().values() for port in published(service)]
    assert len(ports) == len(set(ports)), sorted(ports)
    assert set(ports) >= {3000, 9090, 9093, 16686, 4317, 4318}


def test_images_are_pinned_and_dependencies_exist() -> None:
    for name, service in services().items():
        image = service.get("image", "")
        if "build" not in service:
            assert re.fullmatch(r"[\w./-]+:[\w.-]+", image), f"{name}: pin a tag ({image!r})"
            assert not image.endswith(":latest"), name
        for dependency in service.get("depends_on", {}):
            assert dependency in services(), f"{name} depends on unknown {dependency}"
        for dependency, spec in (service.get("depends_on") or {}).items():
            if spec.get("condition") == "service_healthy":
                assert "healthcheck" in services()[dependency], dependency


def test_daemon_builds_from_the_repository_and_mounts_the_deploy_config() -> None:
    daemon = services()[DAEMON]
    assert (COMPOSE_DIR / daemon["build"]["context"]).resolve() == ROOT
    assert (ROOT / daemon["build"].get("dockerfile", "Dockerfile")).is_file()
    assert daemon["image"] == f"agent-monitor:{project_version()}"
    assert mount_target(DAEMON, MONITOR_YAML) == CONTAINER_CONFIG
    assert daemon["environment"]["AGENT_MONITOR_CONFIG"] == CONTAINER_CONFIG
    # The result store sits in a named volume mounted at its directory.
    store_dir = posixpath.dirname(str(monitor_config().store.path))
    named = {
        target: source
        for source, target, *_ in (v.split(":") for v in daemon["volumes"])
        if not source.startswith((".", "/"))
    }
    assert named.get(store_dir) in compose()["volumes"], (store_dir, named)
    # Compose must wait longer than the daemon's own drain before SIGKILL.
    assert parse_duration(daemon["stop_grace_period"]) > monitor_config().shutdown.grace_period
    assert monitor_config().metrics.port in published(daemon)


# --- Prometheus --------------------------------------------------------------------------------------------------


def test_the_daemon_reads_the_api_token_from_a_compose_secret(tmp_path: Path) -> None:
    """Browsers reach :9464 through Docker's port mapping (not loopback): the review needs a token, which the
    daemon reads from the compose secret's file (api.auth.bearer_token_file)."""
    daemon = services()[DAEMON]
    token_file = daemon["environment"]["AGENT_MONITOR_API__AUTH__BEARER_TOKEN_FILE"]
    [secret] = daemon["secrets"]
    assert token_file == f"/run/secrets/{secret}"  # where compose mounts a secret given by name
    assert compose()["secrets"][secret] == {"environment": "AGENT_MONITOR_API_TOKEN"}
    local = tmp_path / "token"
    local.write_text("s3cret\n")
    config = load_config(MONITOR_YAML, env={"AGENT_MONITOR_API__AUTH__BEARER_TOKEN_FILE": str(local)})
    assert config.api_token() == "s3cret"


def prometheus_yml() -> dict[str, Any]:
    return load_yaml(COMPOSE_DIR / "prometheus.yml")


def test_prometheus_scrapes_the_daemon_under_the_alerting_job() -> None:
    jobs = {job["job_name"]: job for job in prometheus_yml()["scrape_configs"]}
    job = jobs[monitor_config().alerting.job]  # the generated rules query up{job=<alerting.job>}
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    assert targets == [f"{DAEMON}:{monitor_config().metrics.port}"]
    assert monitor_config().metrics.port in exposed(services()[DAEMON])
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert job.get("scheme", "http") == ("https" if monitor_config().api.tls.cert_file else "http")


def test_prometheus_alerts_to_alertmanager_and_keeps_exemplars() -> None:
    alertmanagers = prometheus_yml()["alerting"]["alertmanagers"]
    targets = [t for am in alertmanagers for sc in am["static_configs"] for t in sc["targets"]]
    assert len(targets) == 1
    host, port = host_port(targets[0])
    assert host == "alertmanager" and port in exposed(services()["alertmanager"])
    command = services()["prometheus"]["command"]
    assert "--enable-feature=exemplar-storage" in command
    config_file = next(arg.split("=", 1)[1] for arg in command if arg.startswith("--config.file="))
    assert mount_target("prometheus", COMPOSE_DIR / "prometheus.yml") == config_file


def test_prometheus_rule_files_resolve_to_the_mounted_rules_directory() -> None:
    config_file = mount_target("prometheus", COMPOSE_DIR / "prometheus.yml")
    rules_dir = mount_target("prometheus", ROOT / "deploy" / "prometheus" / "rules")
    for pattern in prometheus_yml()["rule_files"]:
        absolute = posixpath.normpath(posixpath.join(posixpath.dirname(config_file), pattern))
        assert PurePosixPath(absolute).parent == PurePosixPath(rules_dir), pattern
        assert PurePosixPath("agent-monitor.rules.yml").match(PurePosixPath(pattern).name)


@pytest.mark.integration
def test_promtool_accepts_the_config_and_its_rules(tmp_path: Path) -> None:
    """promtool resolves rule_files relative to the config, as Prometheus does in the container."""
    shutil.copy(COMPOSE_DIR / "prometheus.yml", tmp_path / "prometheus.yml")
    shutil.copytree(ROOT / "deploy" / "prometheus" / "rules", tmp_path / "rules")  # written by `make rules`
    result = run(tool("promtool"), "check", "config", "prometheus.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"SUCCESS: [1-9]\d* rule files found", result.stdout), result.stdout


@pytest.mark.integration
def test_amtool_accepts_the_alertmanager_config() -> None:
    result = run(tool("amtool"), "check-config", COMPOSE_DIR / "alertmanager.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert mount_target("alertmanager", COMPOSE_DIR / "alertmanager.yml") == "/etc/alertmanager/alertmanager.yml"
    receivers = load_yaml(COMPOSE_DIR / "alertmanager.yml")["receivers"]
    assert any(r.get("webhook_configs") for r in receivers)


# --- Grafana -----------------------------------------------------------------------------------------------------


def test_grafana_mounts_provisioning_and_dashboards_where_the_provider_looks() -> None:
    grafana = ROOT / "deploy" / "grafana"
    assert mount_target("grafana", grafana / "provisioning") == "/etc/grafana/provisioning"
    dashboards_target = mount_target("grafana", grafana / "dashboards")
    assert dashboards_target == "/var/lib/grafana/dashboards"
    providers = sorted((grafana / "provisioning" / "dashboards").glob("*.y*ml"))
    assert providers
    paths = [p["options"]["path"] for f in providers for p in load_yaml(f).get("providers", [])]
    assert dashboards_target in paths


def test_grafana_datasources_reach_the_compose_services() -> None:
    files = sorted((ROOT / "deploy" / "grafana" / "provisioning" / "datasources").glob("*.y*ml"))
    assert files
    for source in (d for f in files for d in load_yaml(f).get("datasources", [])):
        host, port = host_port(source["url"].rstrip("/"))
        host = host.split("//")[-1]
        assert host in services(), source["url"]
        assert port in exposed(services()[host]), source["url"]


# --- the Collector -----------------------------------------------------------------------------------------------


def test_collector_config_is_consistent_and_uses_documented_fields() -> None:
    assert otelcol.problems(collector_config()) == []


def test_collector_config_checker_catches_mistakes() -> None:
    config = collector_config()
    config["exporters"]["otlp/agent-monitor"]["tls"]["insecur"] = True
    config["processors"]["batch"]["max_size"] = 10
    config["service"]["pipelines"]["traces"]["exporters"].append("otlp/nowhere")
    config["exporters"]["jaeger"] = {"endpoint": "jaeger:14250"}
    found = "\n".join(otelcol.problems(config))
    for expected in ("tls.insecur", "batch.max_size", "'otlp/nowhere' is not defined", "'jaeger' is not a known"):
        assert expected in found


def test_collector_config_is_the_one_the_image_reads() -> None:
    # otel/opentelemetry-collector-contrib runs `--config /etc/otelcol-contrib/config.yaml` by default.
    collector = services()["otel-collector"]
    assert "command" not in collector and "entrypoint" not in collector
    assert mount_target("otel-collector", COMPOSE_DIR / "otelcol.yaml") == "/etc/otelcol-contrib/config.yaml"


def test_collector_receives_otlp_on_the_published_ports() -> None:
    protocols = collector_config()["receivers"]["otlp"]["protocols"]
    for protocol in ("grpc", "http"):
        host, port = host_port(protocols[protocol]["endpoint"])
        assert host == "0.0.0.0", f"{protocol}: the Collector's default (localhost) is unreachable from outside"
        assert port in published(services()["otel-collector"])


def exporter_targets() -> dict[str, str]:
    return {
        host_port(settings["endpoint"])[0]: exporter_id
        for exporter_id, settings in collector_config()["exporters"].items()
        if otelcol.component_type(exporter_id) == "otlp"
    }


def test_collector_sends_traces_and_logs_to_the_daemon_and_traces_to_jaeger() -> None:
    config = collector_config()
    to_daemon = exporter_targets()[DAEMON]
    endpoint = config["exporters"][to_daemon]["endpoint"]
    # OTLP/gRPC exporter -> the daemon's gRPC receiver port, reachable in the compose network.
    assert host_port(endpoint)[1] == monitor_config().receivers.grpc.port
    assert monitor_config().receivers.grpc.port in exposed(services()[DAEMON])
    assert monitor_config().receivers.grpc.enabled
    if not monitor_config().receivers.tls.cert_file:
        assert config["exporters"][to_daemon]["tls"]["insecure"] is True
    assert {"traces", "logs"} <= set(otelcol.pipelines_with(config, "exporters", to_daemon))

    to_jaeger = exporter_targets()["jaeger"]
    assert host_port(config["exporters"][to_jaeger]["endpoint"])[1] in exposed(services()["jaeger"])
    assert services()["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
    assert otelcol.pipelines_with(config, "exporters", to_jaeger) == ["traces"]


def test_memory_limiter_comes_first_in_every_pipeline() -> None:
    for name, pipeline in collector_config()["service"]["pipelines"].items():
        assert pipeline["processors"][0] == "memory_limiter", name
