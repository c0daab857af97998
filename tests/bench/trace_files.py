"""Synthetic agent traces written as OTLP files, half protobuf and half OTLP-JSON (for the offline benchmarks
and the tests of `agent-monitor evaluate` over many traces)."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict

from tests.bench.synthetic import bench_trace_spans, export_request

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(document: Any) -> Any:
    """OTLP-JSON's ids are hex, where protobuf's JSON mapping writes bytes as base64."""
    if isinstance(document, dict):
        for key, value in document.items():
            if key in ID_FIELDS and isinstance(value, str):
                document[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(document, list):
        for item in document:
            _hex_ids(item)
    return document


def otlp_json(request: Any) -> bytes:
    """An export request in the OTLP-JSON encoding (lowerCamelCase keys, hex ids)."""
    return json.dumps(_hex_ids(MessageToDict(request))).encode()


def write_trace_files(folder: Path, traces: int, per_file: int = 50, seed: int = 29) -> list[Path]:
    """`traces` 7-span agent traces in files of `per_file` traces, alternately `.pb` and `.json`; the ids come
    from `seed`, so that the same call writes the same traces."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    start = 1_700_000_000 * 10**9
    files: list[Path] = []
    for number, first in enumerate(range(0, traces, per_file)):
        spans = []
        for i in range(first, min(first + per_file, traces)):
            spans += bench_trace_spans(rng.randbytes(16), start + i * 10**9, i)
        request = export_request(spans)
        if number % 2 == 0:
            path = folder / f"traces_{number:04d}.pb"
            path.write_bytes(request.SerializeToString())
        else:
            path = folder / f"traces_{number:04d}.json"
            path.write_bytes(otlp_json(request))
        files.append(path)
    return files
