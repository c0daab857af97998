"""OTLP receivers: gRPC (grpc.aio) and HTTP (asyncio), both feeding one `monitor.consumer.TraceConsumer`; each
checks requests with an `monitor.auth.Authenticator` and counts its answers in its own
`monitor.metrics.intake.ReceiverTelemetry`."""
