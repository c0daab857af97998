"""The evaluation exporter of `export.evaluations`: the SDK's OTLP log exporter for its protocol, endpoint, headers,
TLS and timeout, behind our queue (exporter.py). The SDK exporters log every failed export; their lines are let
through one a minute per message (ours say what was lost), so a sick endpoint does not flood the log."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk._logs.export import LogRecordExporter

from monitor.config.export import EvaluationExportConfig
from monitor.config.models import MonitorConfig
from monitor.export.exporter import EvaluationExporter
from monitor.export.records import RecordBuilder

SDK_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.http._log_exporter",
    "opentelemetry.exporter.otlp.common.http",
)
HTTP_LOGS_PATH = "/v1/logs"


class OncePerMinute(logging.Filter):
    """Lets a record through once a minute per (logger, message template)."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[tuple[str, object], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key, now = (record.name, record.msg), time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < 60.0:
            return False
        if len(self._last) > 1000:
            self._last.clear()
        self._last[key] = now
        return True


_QUIET = OncePerMinute()


def exporter_of(config: MonitorConfig) -> EvaluationExporter | None:
    """The process's evaluation exporter; None unless `export.evaluations.enabled`."""
    section = config.export.evaluations
    if not section.enabled:
        return None
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)
    return EvaluationExporter(
        otlp_exporter(section),
        RecordBuilder(section.results, section.sample),
        queue_size=section.queue_size,
        batch_size=section.batch_size,
        endpoint=section.endpoint or "",
    )


def otlp_exporter(section: EvaluationExportConfig) -> LogRecordExporter:
    """The SDK's OTLPLogExporter for `section` (the endpoint must be set)."""
    endpoint, tls, headers = section.endpoint or "", section.tls, dict(section.headers)
    if section.protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

        return HttpExporter(
            endpoint=http_logs_url(endpoint),
            certificate_file=tls.ca_file,
            client_key_file=tls.key_file,
            client_certificate_file=tls.cert_file,
            headers=headers,
            timeout=section.timeout,
        )
    import grpc
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

    credentials = None
    if not section.insecure:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(tls.ca_file),
            private_key=_read(tls.key_file),
            certificate_chain=_read(tls.cert_file),
        )
    return GrpcExporter(
        endpoint=endpoint,
        insecure=section.insecure,
        credentials=credentials,
        headers={key.lower(): value for key, value in headers.items()} or None,  # gRPC metadata keys are lowercase
        timeout=section.timeout,
    )


def http_logs_url(endpoint: str) -> str:
    """`endpoint` with the OTLP logs path when it names none (http://collector:4318 → .../v1/logs)."""
    parts = urlsplit(endpoint)
    if parts.path in ("", "/"):
        return urlunsplit(parts._replace(path=HTTP_LOGS_PATH))
    return endpoint


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path is not None else None
