"""TLS on both receivers (a self-signed certificate made with openssl) and the gRPC health service."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.integration.otlp_raw import EXPORT_PATH, request, span

pytestmark = pytest.mark.integration


def test_grpc_health_reports_serving(daemon_factory):
    daemon = daemon_factory()
    with grpc.insecure_channel(f"127.0.0.1:{daemon.grpc_port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "opentelemetry.proto.collector.trace.v1.TraceService"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_tls_on_both_receivers(daemon_factory, certificate):
    key, cert = certificate
    daemon = daemon_factory({"receivers": {"tls": {"cert_file": str(cert), "key_file": str(key)}}})
    payload = request([span("ce" * 16, "01" * 8)]).SerializeToString()
    context = ssl.create_default_context(cafile=str(cert))
    req = urllib.request.Request(
        f"https://127.0.0.1:{daemon.http_port}/v1/traces",
        data=payload,
        headers={"Content-Type": "application/x-protobuf"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10, context=context) as response:
        assert response.status == 200
    credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{daemon.grpc_port}", credentials) as channel:
        call = channel.unary_unary(
            EXPORT_PATH, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )
        call(request([span("cf" * 16, "02" * 8)]).SerializeToString(), timeout=10)
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP is refused on a TLS port
        urllib.request.urlopen(
            urllib.request.Request(
                f"http://127.0.0.1:{daemon.http_port}/v1/traces",
                data=payload,
                headers={"Content-Type": "application/x-protobuf"},
                method="POST",
            ),
            timeout=5,
        )
    assert daemon.wait_for("agent_monitor_spans_received_total", 2) == 2
