"""Read OTLP from bytes, files and directories, join log records to spans, build Trace views."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .builder import build_trace, group_by_trace
from .errors import TraceDecodeError
from .model import Trace
from .otlp_json import decode_traces_json
from .otlp_proto import decode_logs_protobuf, decode_protobuf, decode_traces_protobuf
from .records import DecodedBatch, LogRecord, SpanRecord

TRACE_FILE_SUFFIXES = {".json", ".jsonl", ".pb", ".bin", ".proto", ".otlp", ".ndjson"}
MAX_FILE_BYTES = 512 * 1024 * 1024


def decode_bytes(data: bytes, where: str = "input") -> DecodedBatch:
    """Protobuf, OTLP-JSON or collector JSON lines, told apart by content."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TraceDecodeError(f"expected bytes, got {type(data).__name__}", where)
    data = bytes(data)
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark before JSON
        data = data[3:]
    head = data[:64].lstrip()
    if head[:1] in (b"{", b"["):
        return decode_traces_json(data, where)
    if not head:
        return DecodedBatch()
    return decode_protobuf(data, where)


def decode_export(payload: bytes, encoding: str, signal: str, where: str) -> DecodedBatch:
    """One OTLP export request's body as a receiver got it: `encoding` "json" | "protobuf", `signal` "traces" |
    "logs" (from the path, not guessed from the content). Raises TraceDecodeError."""
    if encoding == "json":
        batch = decode_traces_json(payload, where)
        if signal == "logs":
            batch.spans.clear()
        return batch
    if signal == "logs":
        return decode_logs_protobuf(payload, where)
    return decode_traces_protobuf(payload, where)


def _files_in(path: Path) -> list[Path]:
    if path.is_dir():
        found = [
            p
            for p in sorted(path.rglob("*"))
            if p.is_file() and p.suffix.lower() in TRACE_FILE_SUFFIXES and not _is_sidecar(p)
        ]
        return _prefer_one_encoding(found)
    return [path]


def trace_files(path: Path) -> list[Path]:
    """The files `read_paths` decodes for `path`, in its order: a directory's trace files, sorted, or the file."""
    return _files_in(path)


def _is_sidecar(path: Path) -> bool:
    """Files in a corpus folder that are not OTLP (manifests, expectations, fake-server logs)."""
    return path.name in ("expected.json", "manifest.jsonl", "fake_llm_log.jsonl", "package.json")


def _prefer_one_encoding(paths: list[Path]) -> list[Path]:
    """Where `x.pb` and `x.json` both exist (the same request twice), keep only the protobuf."""
    stems_with_pb = {p.with_suffix("") for p in paths if p.suffix.lower() == ".pb"}
    return [p for p in paths if p.suffix.lower() == ".pb" or p.with_suffix("") not in stems_with_pb]


def read_paths(paths: Iterable[str | os.PathLike[str]]) -> DecodedBatch:
    """Decode every file (directories are walked); raises TraceDecodeError naming the file."""
    batch = DecodedBatch()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise TraceDecodeError("no such file or directory", str(path))
        for file in _files_in(path):
            size = file.stat().st_size
            if size > MAX_FILE_BYTES:
                raise TraceDecodeError(f"file is {size} bytes, over the {MAX_FILE_BYTES} byte limit", str(file))
            batch.extend(decode_bytes(file.read_bytes(), str(file)))
    return batch


def join_logs(spans: list[SpanRecord], logs: list[LogRecord]) -> int:
    """Attach log records to the spans they name (by trace id and span id); returns how many joined."""
    if not logs:
        return 0
    by_key = {(s.trace_id, s.span_id): s for s in spans}
    joined = 0
    for log in sorted(logs, key=lambda r: r.time_unix_nano):
        span = by_key.get((log.trace_id, log.span_id))
        if span is not None:
            span.logs.append(log.as_event())
            joined += 1
    return joined


def traces_from_batch(batch: DecodedBatch) -> list[Trace]:
    join_logs(batch.spans, batch.logs)
    return [build_trace(spans, trace_id) for trace_id, spans in group_by_trace(batch.spans).items()]


def load_traces(source: str | os.PathLike[str] | bytes | Iterable[str | os.PathLike[str]]) -> list[Trace]:
    """Trace views from a file, a directory, a list of paths, or raw OTLP bytes.

    Accepts OTLP protobuf, OTLP-JSON, collector file-exporter JSON lines, and OTLP logs exports
    (their records are joined to the spans they name). Raises TraceDecodeError on bad input.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return traces_from_batch(decode_bytes(bytes(source)))
    if isinstance(source, (str, os.PathLike)):
        return traces_from_batch(read_paths([source]))
    return traces_from_batch(read_paths(source))


__all__ = [
    "MAX_FILE_BYTES",
    "decode_bytes",
    "decode_export",
    "join_logs",
    "load_traces",
    "read_paths",
    "trace_files",
    "traces_from_batch",
]
