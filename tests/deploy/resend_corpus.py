"""Send corpus traces again under fresh trace ids, with the real OTel SDK OTLP/gRPC exporter (run as a process).

    python tests/deploy/resend_corpus.py --endpoint 127.0.0.1:4317 --round 2 [--service NAME] DIR [DIR...]

The daemon never re-evaluates a trace id it has evaluated (later spans count as late), so a second round of the
same scenarios needs new ids: every trace id becomes a hash of (round, original id), and every session id (the
attributes of evaluators.sessions.SESSION_ATTRIBUTES) gets `@<round>` (a completed conversation's later turns are
late). `--service` replaces the resource `service.name` of every span.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from opentelemetry.sdk.trace.export import SpanExportResult

from evaluators.sessions import SESSION_ATTRIBUTES
from evaluators.traces import read_paths
from tests.integration.otel_sender import make_exporter, readable


def new_trace_id(round_tag: str, trace_id: str) -> str:
    return hashlib.sha256(f"{round_tag}:{trace_id}".encode()).hexdigest()[:32]


def new_session_ids(attributes: dict[str, object], round_tag: str) -> dict[str, object]:
    """`attributes` with each session id attribute's value suffixed by `@<round>`."""
    return {
        k: f"{v}@{round_tag}" if k in SESSION_ATTRIBUTES and isinstance(v, str) else v for k, v in attributes.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--round", required=True)
    parser.add_argument("--service")
    parser.add_argument("dirs", nargs="+")
    args = parser.parse_args()
    spans = []
    for record in read_paths(args.dirs).spans:
        resource = new_session_ids(dict(record.resource_attributes), args.round)
        changes: dict[str, object] = {
            "trace_id": new_trace_id(args.round, record.trace_id),
            "attributes": new_session_ids(dict(record.attributes), args.round),
            "resource_attributes": {**resource, "service.name": args.service} if args.service else resource,
        }
        spans.append(readable(dataclasses.replace(record, **changes)))
    exporter = make_exporter("grpc", args.endpoint, {}, None)
    result = exporter.export(spans)
    exporter.shutdown()
    print(f"exported {len(spans)} spans: {result.name}", flush=True)
    return 0 if result is SpanExportResult.SUCCESS else 1


if __name__ == "__main__":
    sys.exit(main())
