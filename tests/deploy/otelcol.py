"""What a test can check of an OpenTelemetry Collector config without the otelcol binary.

The allow-lists are the documented config fields (the `mapstructure` tags of each component's Config struct) of
the release the deploy files pin, otel/opentelemetry-collector-contrib 0.141.0:
  core components (otlp receiver and exporter, batch, memory_limiter):
    https://github.com/open-telemetry/opentelemetry-collector/tree/v0.141.0/receiver/otlpreceiver/config.go
    https://github.com/open-telemetry/opentelemetry-collector/tree/v0.141.0/exporter/otlpexporter/config.go
    https://github.com/open-telemetry/opentelemetry-collector/tree/v0.141.0/processor/batchprocessor/config.go
    https://github.com/open-telemetry/opentelemetry-collector/tree/v0.141.0/internal/memorylimiter/config.go
    (with config/configgrpc, config/confighttp, config/configtls, config/configretry, exporterhelper's queue)
  contrib components (loadbalancing exporter, health_check extension):
    https://github.com/open-telemetry/opentelemetry-collector-contrib/tree/v0.141.0/exporter/loadbalancingexporter
    https://github.com/open-telemetry/opentelemetry-collector-contrib/tree/v0.141.0/extension/healthcheckextension
Only the components these deploy files use are listed; add a component's fields from its docs before using it.
"""

from __future__ import annotations

from typing import Any

# Component types of the contrib distribution that the deploy configs may use, by kind:
# https://github.com/open-telemetry/opentelemetry-collector-releases/blob/main/distributions/otelcol-contrib/manifest.yaml
KNOWN_TYPES: dict[str, set[str]] = {
    "receivers": {"otlp"},
    "processors": {"batch", "memory_limiter"},
    "exporters": {"otlp", "otlphttp", "loadbalancing", "debug"},
    "extensions": {"health_check"},
    "connectors": set(),
}

Schema = dict[str, Any]  # field -> None (a value), a nested Schema, or ANY (a map with free keys, e.g. headers)
ANY: Schema = {"*": None}


def fields(names: str, **nested: Schema) -> Schema:
    """A schema from space-separated value fields, plus nested ones."""
    return {**dict.fromkeys(names.split()), **nested}


_TLS = (
    "ca_file ca_pem include_system_ca_certs_pool cert_file cert_pem key_file key_pem min_version max_version "
    "cipher_suites reload_interval curve_preferences tpm"
)
TLS_CLIENT = fields(_TLS + " insecure insecure_skip_verify server_name_override")
TLS_SERVER = fields(_TLS + " client_ca_file client_ca_file_reload")

GRPC_SERVER = fields(
    "endpoint transport dialer max_recv_msg_size_mib max_concurrent_streams read_buffer_size write_buffer_size "
    "keepalive auth include_metadata middlewares",
    tls=TLS_SERVER,
)
HTTP_SERVER = fields(
    "endpoint cors auth max_request_body_size include_metadata compression_algorithms read_timeout "
    "read_header_timeout write_timeout idle_timeout middlewares keep_alives_enabled",
    tls=TLS_SERVER,
    response_headers=ANY,
)
GRPC_CLIENT = fields(
    "endpoint compression keepalive read_buffer_size write_buffer_size wait_for_ready balancer_name authority auth "
    "middlewares",
    tls=TLS_CLIENT,
    headers=ANY,
)
SENDING_QUEUE = fields("enabled wait_for_result sizer queue_size block_on_overflow storage num_consumers batch")
RETRY = fields("enabled initial_interval randomization_factor multiplier max_interval max_elapsed_time")
OTLP_EXPORTER: Schema = {**GRPC_CLIENT, "timeout": None, "sending_queue": SENDING_QUEUE, "retry_on_failure": RETRY}

FIELDS: dict[str, dict[str, Schema]] = {
    "receivers": {
        "otlp": {
            "protocols": {
                "grpc": GRPC_SERVER,
                "http": {**HTTP_SERVER, **fields("traces_url_path metrics_url_path logs_url_path")},
            }
        },
    },
    "processors": {
        "batch": fields("timeout send_batch_size send_batch_max_size metadata_keys metadata_cardinality_limit"),
        "memory_limiter": fields(
            "check_interval min_gc_interval_when_soft_limited min_gc_interval_when_hard_limited limit_mib "
            "spike_limit_mib limit_percentage spike_limit_percentage"
        ),
    },
    "exporters": {
        "otlp": OTLP_EXPORTER,
        "loadbalancing": fields(
            "routing_key",
            protocol={"otlp": OTLP_EXPORTER},
            resolver=fields(
                "aws_cloud_map",
                static=fields("hostnames"),
                dns=fields("hostname port interval timeout"),
                k8s=fields("service ports timeout return_hostnames"),
            ),
        ),
    },
    "extensions": {
        "health_check": {**HTTP_SERVER, **fields("path response_body check_collector_pipeline")},
    },
}

KINDS = ("receivers", "processors", "exporters", "extensions", "connectors")
SERVICE_KEYS = {"extensions", "pipelines", "telemetry"}
PIPELINE_KEYS = {"receivers", "processors", "exporters"}
SIGNALS = {"traces", "metrics", "logs", "profiles"}


def component_type(component_id: str) -> str:
    """`otlp/agent-monitor` -> `otlp`."""
    return component_id.split("/", 1)[0]


def unknown_keys(value: Any, schema: Schema | None, where: str) -> list[str]:
    """Keys of `value` (recursively) that `schema` does not document."""
    if schema is None or schema is ANY or not isinstance(value, dict):
        return []
    problems = []
    for key, sub in value.items():
        if key not in schema:
            problems.append(f"{where}.{key}: not a documented field (known: {', '.join(sorted(schema))})")
        else:
            problems += unknown_keys(sub, schema[key], f"{where}.{key}")
    return problems


def problems(config: dict[str, Any]) -> list[str]:
    """Everything wrong with `config` that can be told without the binary (empty when none)."""
    found: list[str] = []
    for top in config:
        if top not in {*KINDS, "service"}:
            found.append(f"{top}: not a top-level section of a Collector config")
    for kind in KINDS:
        for component_id, settings in (config.get(kind) or {}).items():
            ctype = component_type(component_id)
            if ctype not in KNOWN_TYPES[kind]:
                found.append(f"{kind}.{component_id}: {ctype!r} is not a known {kind[:-1]} type")
                continue
            if settings is not None and not isinstance(settings, dict):
                found.append(f"{kind}.{component_id}: settings must be a mapping")
                continue
            found += unknown_keys(settings or {}, FIELDS[kind].get(ctype), f"{kind}.{component_id}")

    service = config.get("service") or {}
    found += [f"service.{key}: unknown" for key in service if key not in SERVICE_KEYS]
    used: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for ext in service.get("extensions") or []:
        used["extensions"].add(ext)
        if ext not in (config.get("extensions") or {}):
            found.append(f"service.extensions: {ext!r} is not defined under extensions")
    pipelines = service.get("pipelines") or {}
    if not pipelines:
        found.append("service.pipelines: none")
    for name, pipeline in pipelines.items():
        if component_type(name) not in SIGNALS:
            found.append(f"service.pipelines.{name}: not a signal ({', '.join(sorted(SIGNALS))})")
        found += [f"service.pipelines.{name}.{key}: unknown" for key in pipeline if key not in PIPELINE_KEYS]
        for kind in ("receivers", "exporters"):
            if not pipeline.get(kind):
                found.append(f"service.pipelines.{name}: no {kind}")
        for kind in PIPELINE_KEYS:
            for component_id in pipeline.get(kind) or []:
                used[kind].add(component_id)
                if component_id not in (config.get(kind) or {}):
                    found.append(f"service.pipelines.{name}.{kind}: {component_id!r} is not defined under {kind}")
    for kind in KINDS:
        for component_id in config.get(kind) or {}:
            if component_id not in used[kind]:
                found.append(f"{kind}.{component_id}: defined but used by no pipeline")
    return found


def pipelines_with(config: dict[str, Any], kind: str, component_id: str) -> list[str]:
    return [name for name, p in config["service"]["pipelines"].items() if component_id in (p.get(kind) or [])]
