"""OTLP receivers: gRPC (grpc.aio) and HTTP (asyncio), both feeding one `monitor.consumer.TraceConsumer`; each
checks requests with an `monitor.auth.Authenticator` and counts its answers in its own
`monitor.metrics.intake.ReceiverTelemetry`.

The public modules are the ones `__all__` names; `memory` (giving large freed requests back to the OS) is internal to
the package. Importing the package imports none of its modules.
"""

__all__ = ["grpc_receiver", "http_receiver", "inflight"]
