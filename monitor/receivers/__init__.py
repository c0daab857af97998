"""OTLP receivers: gRPC (grpc.aio) and HTTP (asyncio), both feeding the same Ingestor."""
