"""deploy/kubernetes: core kinds validated by kubernetes-validate (strict, the bundled schemas), the
prometheus-operator kinds checked against their documented fields, and the wiring between all of them and the
daemon's config (ports, probes, job name, the Collector's trace-ID load balancing)."""

from __future__ import annotations

import posixpath
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config import load_config
from tests.deploy import otelcol
from tests.deploy.support import (
    KUBE_DIR,
    MONITOR_YAML,
    host_port,
    load_all_yaml,
    load_yaml,
    monitor_config,
    project_version,
    run,
    tool,
)

NAMESPACE = "agent-monitor"
CRD_GROUP = "monitoring.coreos.com/v1"
IMAGE_UID = 10001  # the Dockerfile's USER


def names(text: str) -> set[str]:
    return set(text.split())


# Documented fields of the prometheus-operator CRDs (monitoring.coreos.com/v1), from the API reference
# https://prometheus-operator.dev/docs/api-reference/api/ (ServiceMonitorSpec, Endpoint, PrometheusRuleSpec,
# RuleGroup, Rule). The subset a hand-written manifest plausibly uses; add fields from the reference as needed.
SERVICEMONITOR_SPEC = names(
    "attachMetadata bodySizeLimit endpoints fallbackScrapeProtocol jobLabel keepDroppedTargets labelLimit "
    "labelNameLengthLimit labelValueLengthLimit namespaceSelector podTargetLabels sampleLimit scrapeClass "
    "scrapeClassicHistograms scrapeProtocols selector targetLabels targetLimit"
)
SERVICEMONITOR_ENDPOINT = names(
    "authorization basicAuth bearerTokenSecret enableHttp2 filterRunning followRedirects honorLabels "
    "honorTimestamps interval metricRelabelings oauth2 params path port proxyUrl relabelings scheme scrapeTimeout "
    "targetPort tlsConfig trackTimestampsStaleness"
)
SCRAPE_PROTOCOLS = names(
    "PrometheusProto OpenMetricsText0.0.1 OpenMetricsText1.0.0 PrometheusText0.0.4 PrometheusText1.0.0"
)
PROMETHEUSRULE_GROUP = {"name", "interval", "labels", "limit", "partial_response_strategy", "query_offset", "rules"}
PROMETHEUSRULE_RULE = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}


def manifest_files() -> list[Path]:
    return sorted(p for p in KUBE_DIR.glob("*.yaml") if p.name != "kustomization.yaml")


@cache
def objects() -> list[dict[str, Any]]:
    return [doc for path in manifest_files() for doc in load_all_yaml(path)]


def find(kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objects() if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(kind: str, name: str) -> dict[str, Any]:
    found = find(kind, name)
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def daemon() -> dict[str, Any]:
    return one("Deployment", "agent-monitor")


def daemon_container() -> dict[str, Any]:
    return next(c for c in daemon()["spec"]["template"]["spec"]["containers"] if c["name"] == "agent-monitor")


def container_ports(container: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container["ports"]}


def resolve_port(container: dict[str, Any], port: int | str) -> int:
    return container_ports(container)[port] if isinstance(port, str) else port


# --- files ---------------------------------------------------------------------------------------------------------


def test_kustomization_lists_every_manifest() -> None:
    kustomization = load_yaml(KUBE_DIR / "kustomization.yaml")
    resources = kustomization["resources"]
    assert len(resources) == len(set(resources))
    # prometheusrule.yaml is written by `agent-monitor rules`; listed whether or not it is in this tree yet.
    assert set(resources) == {p.name for p in manifest_files()} | {"prometheusrule.yaml"}
    assert kustomization.get("namespace", NAMESPACE) == NAMESPACE


def test_every_object_lives_in_the_namespace() -> None:
    assert [o["metadata"]["name"] for o in find("Namespace")] == [NAMESPACE]
    for obj in objects():
        if obj["kind"] != "Namespace":
            assert obj["metadata"].get("namespace") == NAMESPACE, f"{obj['kind']}/{obj['metadata']['name']}"


CORE_FILES = [p for p in manifest_files() if all(d["apiVersion"] != CRD_GROUP for d in load_all_yaml(p))]


@pytest.mark.integration
@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: p.name)
def test_core_manifest_passes_strict_schema_validation(path: Path) -> None:
    result = run(tool("kubernetes-validate"), "--strict", path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "ERROR" not in output and "WARN" not in output, output  # WARN: no schema found, i.e. nothing checked
    assert output.count("passed for resource") == len(load_all_yaml(path)), output


@pytest.mark.integration
def test_strict_validation_rejects_an_unknown_field(tmp_path: Path) -> None:
    broken = tmp_path / "deployment.yaml"
    broken.write_text((KUBE_DIR / "deployment.yaml").read_text().replace("readOnlyRootFilesystem", "readOnlyRootFs"))
    result = run(tool("kubernetes-validate"), "--strict", broken)
    assert result.returncode != 0
    assert "readOnlyRootFs" in result.stdout + result.stderr


def test_core_files_cover_everything_but_the_operator_kinds() -> None:
    crd_kinds = {o["kind"] for o in objects() if o["apiVersion"] == CRD_GROUP}
    assert crd_kinds <= {"ServiceMonitor", "PrometheusRule"}
    assert {p.name for p in manifest_files()} - {p.name for p in CORE_FILES} <= {
        "servicemonitor.yaml",
        "prometheusrule.yaml",
    }


# --- the daemon ----------------------------------------------------------------------------------------------------


def test_configmap_carries_deploy_monitor_yaml_verbatim() -> None:
    configmap = one("ConfigMap", "agent-monitor-config")
    assert configmap["data"]["monitor.yaml"] == MONITOR_YAML.read_text(encoding="utf-8")


def test_config_is_mounted_where_the_daemon_reads_it() -> None:
    container = daemon_container()
    env = {e["name"]: e for e in container["env"]}
    config_file = env["AGENT_MONITOR_CONFIG"]["value"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in daemon()["spec"]["template"]["spec"]["volumes"]}
    config_mount = next(m for m in mounts.values() if m["mountPath"] == posixpath.dirname(config_file))
    assert config_mount.get("readOnly") is True
    configmap_name = volumes[config_mount["name"]]["configMap"]["name"]
    assert posixpath.basename(config_file) in one("ConfigMap", configmap_name)["data"]
    assert container["args"] == ["run"]


def test_image_is_the_project_version() -> None:
    assert daemon_container()["image"] == f"agent-monitor:{project_version()}"


def test_probes_hit_the_daemon_health_endpoints() -> None:
    container = daemon_container()
    config = monitor_config()
    scheme = "HTTPS" if config.api.tls.cert_file else "HTTP"
    expected = {"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"}
    for probe, path in expected.items():
        http = container[probe]["httpGet"]
        assert http["path"] == path, probe
        assert resolve_port(container, http["port"]) == config.metrics.port, probe
        assert http.get("scheme", "HTTP") == scheme, probe
    # The startup probe allows a slow start; liveness must not kill a pod that is merely busy (readiness does that).
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 30


def test_container_ports_are_the_daemon_ports() -> None:
    config = monitor_config()
    assert container_ports(daemon_container()) == {
        "otlp-grpc": config.receivers.grpc.port,
        "otlp-http": config.receivers.http.port,
        "metrics": config.metrics.port,
    }


def test_service_ports_match_the_container() -> None:
    service = one("Service", "agent-monitor")
    container = daemon_container()
    pod_labels = daemon()["spec"]["template"]["metadata"]["labels"]
    assert matches(service["spec"]["selector"], pod_labels)
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert set(ports) == {"otlp-grpc", "otlp-http", "metrics"}
    for name, port in ports.items():
        assert resolve_port(container, port["targetPort"]) == container_ports(container)[name]
        assert port["port"] == container_ports(container)[name]


def test_selectors_pick_the_daemon_pods() -> None:
    deployment = daemon()
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert matches(deployment["spec"]["selector"]["matchLabels"], pod_labels)
    pdb = one("PodDisruptionBudget", "agent-monitor")
    assert matches(pdb["spec"]["selector"]["matchLabels"], pod_labels)
    assert "maxUnavailable" in pdb["spec"] or pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]


def test_pod_runs_non_root_with_a_read_only_root_filesystem() -> None:
    pod = daemon()["spec"]["template"]["spec"]
    container = daemon_container()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == IMAGE_UID
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    # Writable places: the result store's directory and /tmp, both emptyDir volumes.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    store_dir = posixpath.dirname(str(monitor_config().store.path))
    assert "emptyDir" in volumes[mounts[store_dir]] or "persistentVolumeClaim" in volumes[mounts[store_dir]]
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_every_pod_meets_the_restricted_pod_security_standard() -> None:
    """The namespace enforces `restricted`: a pod template that breaks it would be refused at admission."""
    assert one("Namespace", NAMESPACE)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for deployment in find("Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"]["type"] in {"RuntimeDefault", "Localhost"}
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
        allowed_volumes = {"configMap", "emptyDir", "secret", "projected", "persistentVolumeClaim"}
        assert all(set(v) - {"name"} <= allowed_volumes for v in pod.get("volumes", []))
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, container["name"]
            assert context["capabilities"]["drop"] == ["ALL"], container["name"]
            assert not context.get("capabilities", {}).get("add"), container["name"]
            assert not context.get("privileged"), container["name"]


def test_grace_period_outlasts_the_daemon_drain() -> None:
    grace = daemon()["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > monitor_config().shutdown.grace_period


def test_resources_are_bounded() -> None:
    resources = daemon_container()["resources"]
    for bound in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(resources[bound]), bound


def test_judge_key_comes_from_an_optional_secret() -> None:
    env = {e["name"]: e for e in daemon_container()["env"]}
    ref = env["GEMINI_API_KEY"]["valueFrom"]["secretKeyRef"]
    assert ref["optional"] is True and ref["name"] and ref["key"]


def test_the_api_token_comes_from_a_mounted_secret_the_config_reads(tmp_path: Path) -> None:
    """The review page and API need a token in a cluster (without one they answer loopback clients only): the
    daemon reads it from the Secret agent-monitor-api, mounted as a file, through api.auth.bearer_token_file."""
    env = {e["name"]: e for e in daemon_container()["env"]}
    token_file = env["AGENT_MONITOR_API__AUTH__BEARER_TOKEN_FILE"]["value"]
    mounts = {m["name"]: m for m in daemon_container()["volumeMounts"]}
    volumes = {v["name"]: v for v in daemon()["spec"]["template"]["spec"]["volumes"]}
    [(name, mount)] = [(n, m) for n, m in mounts.items() if posixpath.dirname(token_file) == m["mountPath"]]
    assert mount["readOnly"] is True
    secret = volumes[name]["secret"]
    assert secret["secretName"] == "agent-monitor-api" and not secret.get("optional", False)
    assert {"key": "token", "path": posixpath.basename(token_file)} in secret["items"]
    assert secret["defaultMode"] & 0o040  # the image's group (fsGroup) reads it
    assert daemon()["spec"]["template"]["spec"]["securityContext"]["fsGroup"] == IMAGE_UID
    local = tmp_path / "token"
    local.write_text("s3cret\n")
    config = load_config(MONITOR_YAML, env={"AGENT_MONITOR_API__AUTH__BEARER_TOKEN_FILE": str(local)})
    assert config.api_token() == "s3cret"
    assert "create secret generic agent-monitor-api" in (KUBE_DIR / "kustomization.yaml").read_text()


# --- prometheus-operator kinds ---------------------------------------------------------------------------------------


def test_servicemonitor_scrapes_the_metrics_port_in_openmetrics() -> None:
    monitor = one("ServiceMonitor", "agent-monitor")
    assert monitor["apiVersion"] == CRD_GROUP
    spec = monitor["spec"]
    assert set(spec) <= SERVICEMONITOR_SPEC, set(spec) - SERVICEMONITOR_SPEC
    assert {"selector", "endpoints"} <= set(spec)
    # Exactly one Service: a second one over the same pods would scrape every pod twice.
    selected = [s for s in find("Service") if matches(spec["selector"]["matchLabels"], s["metadata"]["labels"])]
    assert [s["metadata"]["name"] for s in selected] == ["agent-monitor"]
    service = selected[0]
    assert service["metadata"]["namespace"] in spec.get("namespaceSelector", {}).get("matchNames", [NAMESPACE])
    port_names = {p["name"] for p in service["spec"]["ports"]}
    [endpoint] = spec["endpoints"]
    assert set(endpoint) <= SERVICEMONITOR_ENDPOINT, set(endpoint) - SERVICEMONITOR_ENDPOINT
    assert endpoint["port"] in port_names and endpoint["port"] == "metrics"
    assert endpoint.get("path", "/metrics") == "/metrics"
    assert endpoint["interval"] == "15s"
    assert spec["scrapeProtocols"][0] == "OpenMetricsText1.0.0"  # exemplars need OpenMetrics
    assert set(spec["scrapeProtocols"]) <= SCRAPE_PROTOCOLS


def test_servicemonitor_job_is_the_alerting_job() -> None:
    """prometheus-operator sets job to the Service's `jobLabel` label, else to the Service name."""
    spec = one("ServiceMonitor", "agent-monitor")["spec"]
    service = one("Service", "agent-monitor")
    job = service["metadata"]["labels"].get(spec.get("jobLabel", ""), service["metadata"]["name"])
    assert job == monitor_config().alerting.job


def test_prometheusrule_has_the_documented_shape() -> None:
    path = KUBE_DIR / "prometheusrule.yaml"
    assert path.exists(), "run `make rules`"
    [rule] = load_all_yaml(path)
    assert rule["apiVersion"] == CRD_GROUP and rule["kind"] == "PrometheusRule"
    assert rule["metadata"].get("namespace", NAMESPACE) == NAMESPACE
    groups = rule["spec"]["groups"]
    assert groups and set(rule["spec"]) == {"groups"}
    for group in groups:
        assert set(group) <= PROMETHEUSRULE_GROUP and group["name"]
        for item in group["rules"]:
            assert set(item) <= PROMETHEUSRULE_RULE, item
            assert ("alert" in item) != ("record" in item) and item["expr"]


# --- the Collector ---------------------------------------------------------------------------------------------------


def collector_config() -> dict[str, Any]:
    return yaml.safe_load(one("ConfigMap", "otel-collector-config")["data"]["config.yaml"])


def test_collector_config_is_consistent_and_uses_documented_fields() -> None:
    assert otelcol.problems(collector_config()) == []


def test_collector_balances_by_trace_id() -> None:
    config = collector_config()
    balancers = [e for e in config["exporters"] if otelcol.component_type(e) == "loadbalancing"]
    assert len(balancers) == 1
    balancer = config["exporters"][balancers[0]]
    assert balancer["routing_key"] == "traceID"
    # The endpoint of each backend comes from the resolver; one set in the template would be overridden.
    assert "endpoint" not in balancer["protocol"]["otlp"]
    for signal in ("traces", "logs"):
        pipeline = config["service"]["pipelines"][signal]
        assert pipeline["exporters"] == [balancers[0]], signal  # nothing bypasses the balancing
        assert pipeline["processors"][0] == "memory_limiter"


def test_collector_resolver_points_at_the_daemon_pods() -> None:
    resolver = collector_config()["exporters"]["loadbalancing"]["resolver"]
    assert len(resolver) == 1, "the exporter uses one resolver"
    daemon_port = monitor_config().receivers.grpc.port
    pod_labels = daemon()["spec"]["template"]["metadata"]["labels"]
    if "dns" in resolver:
        name, namespace, *rest = resolver["dns"]["hostname"].split(".")
        assert rest in ([], ["svc", "cluster", "local"], ["svc"])
        service = one("Service", name)
        assert service["metadata"]["namespace"] == namespace
        # One A record per pod only from a headless Service (a ClusterIP would be a single backend).
        assert service["spec"]["clusterIP"] == "None"
        ports = [int(resolver["dns"].get("port", 4317))]
    else:
        name, _, namespace = resolver["k8s"]["service"].partition(".")
        service = one("Service", name)
        assert service["metadata"]["namespace"] == (namespace or NAMESPACE)
        ports = resolver["k8s"].get("ports", [4317])
    assert matches(service["spec"]["selector"], pod_labels)
    assert ports == [daemon_port]
    service_ports = {p["port"]: p for p in service["spec"]["ports"]}
    assert resolve_port(daemon_container(), service_ports[daemon_port]["targetPort"]) == daemon_port


def test_collector_deployment_runs_this_config() -> None:
    collector = one("Deployment", "otel-collector")
    pod = collector["spec"]["template"]["spec"]
    [container] = pod["containers"]
    config_file = next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--config="))
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == posixpath.dirname(config_file))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == "otel-collector-config"
    assert posixpath.basename(config_file) in one("ConfigMap", "otel-collector-config")["data"]
    assert container["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert not container["image"].endswith(":latest")
    assert matches(collector["spec"]["selector"]["matchLabels"], collector["spec"]["template"]["metadata"]["labels"])


def test_collector_ports_probes_and_service_agree_with_its_config() -> None:
    config = collector_config()
    collector = one("Deployment", "otel-collector")
    [container] = collector["spec"]["template"]["spec"]["containers"]
    ports = container_ports(container)
    protocols = config["receivers"]["otlp"]["protocols"]
    for name, protocol in (("otlp-grpc", "grpc"), ("otlp-http", "http")):
        host, port = host_port(protocols[protocol]["endpoint"])
        assert host == "0.0.0.0" and ports[name] == port
    health_port = host_port(config["extensions"]["health_check"]["endpoint"])[1]
    for probe in ("livenessProbe", "readinessProbe"):
        assert resolve_port(container, container[probe]["httpGet"]["port"]) == health_port
    service = one("Service", "otel-collector")
    assert matches(service["spec"]["selector"], collector["spec"]["template"]["metadata"]["labels"])
    for port in service["spec"]["ports"]:
        assert resolve_port(container, port["targetPort"]) == port["port"]
