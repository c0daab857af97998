"""OTLP receivers: gRPC (grpc.aio) and HTTP (asyncio), both feeding one `monitor.consumer.TraceConsumer`."""
