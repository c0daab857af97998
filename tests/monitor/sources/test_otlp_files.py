"""The otlp_files feed: what the Collector's file exporter writes (JSON lines, length-prefixed protobuf, per-record
and whole-file zstd, rotation, compressed backups) and OTLP dumps, each span read exactly once."""

from __future__ import annotations

import asyncio
import base64
import functools
import gzip
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import zstandard
from google.protobuf.json_format import ParseDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from evaluators.traces.records import SpanRecord
from monitor.config.sources import OtlpFilesSourceConfig
from monitor.sources import otlp_files
from monitor.sources.base import SourceError
from monitor.sources.otlp_files import OtlpFilesFeed
from tests.conftest import CORPUS
from tests.support.otlp_json import corpus_traces, otlp_document

SCENARIOS = ("oi_openai__tool_agent", "otel_genai__tool_error", "adk_native__tool_agent")
Key = tuple[str, str]


@functools.cache
def base_traces() -> tuple[list[SpanRecord], ...]:
    return tuple(corpus_traces(*SCENARIOS).values())


def trace(i: int) -> list[SpanRecord]:
    """The i-th distinct trace: a corpus trace under its own trace id."""
    base = base_traces()[i % len(base_traces())]
    return [replace(s, trace_id=f"{i + 1:032x}") for s in base]


def line(spans: list[SpanRecord]) -> bytes:
    """One line as the exporter writes it with `format: json`."""
    return json.dumps(otlp_document(spans), separators=(",", ":")).encode() + b"\n"


def request_pb(spans: list[SpanRecord]) -> bytes:
    """ExportTraceServiceRequest bytes (ids turned from the JSON mapping's hex into protobuf bytes)."""
    document = otlp_document(spans)
    for rs in document["resourceSpans"]:
        for span in rs["scopeSpans"][0]["spans"]:
            for field in ("traceId", "spanId", "parentSpanId"):
                span[field] = base64.b64encode(bytes.fromhex(span[field])).decode()
    return ParseDict(document, ExportTraceServiceRequest()).SerializeToString()


def record(message: bytes) -> bytes:
    """One message as the exporter writes it with `format: proto` (or any `compression`)."""
    return len(message).to_bytes(4, "big") + message


def keys(spans: list[SpanRecord]) -> Counter[Key]:
    return Counter((s.trace_id, s.span_id) for s in spans)


def expected(*indexes: int) -> Counter[Key]:
    return sum((keys(trace(i)) for i in indexes), Counter())


def make_feed(directory: Path, pattern: str = "*") -> OtlpFilesFeed:
    config = OtlpFilesSourceConfig(type="otlp_files", name="files", directory=str(directory), pattern=pattern)
    return OtlpFilesFeed(config)


class Reader:
    """Reads a feed like the runner: the state stored as JSON between reads, every span counted."""

    def __init__(self, directory: Path, pattern: str = "*") -> None:
        self.directory, self.pattern = directory, pattern
        self.feed = make_feed(directory, pattern)
        self.state: Any = None
        self.seen: Counter[Key] = Counter()
        self.logs: list[Any] = []

    def read(self, limit: int = 1_000_000) -> Counter[Key]:
        spans, logs, state = asyncio.run(self.feed.read(self.state, limit))
        self.state = json.loads(json.dumps(state))
        self.seen += keys(spans)
        self.logs += logs
        return keys(spans)

    def restart(self) -> None:
        self.feed = make_feed(self.directory, self.pattern)


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def compress(path: Path, kind: str) -> Path:
    """A rotated backup compressed whole (logrotate, timberjack), the plain one removed."""
    data = path.read_bytes()
    target = path.with_name(path.name + (".gz" if kind == "gzip" else ".zst"))
    target.write_bytes(gzip.compress(data) if kind == "gzip" else zstandard.ZstdCompressor().compress(data))
    path.unlink()
    return target


def test_lines_appended_across_reads_are_read_once(tmp_path: Path) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, line(trace(0)) + line(trace(1)))
    assert reader.read() == expected(0, 1)
    assert reader.read() == Counter()
    append(active, line(trace(2)))
    assert reader.read() == expected(2)
    assert reader.seen == expected(0, 1, 2) and reader.feed.decode_errors == 0


def test_a_partially_written_last_line_waits_for_its_end(tmp_path: Path) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    second = line(trace(1))
    append(active, line(trace(0)) + second[:100])
    assert reader.read() == expected(0)
    append(active, second[100:-1])  # whole but for its newline: a complete object is read
    assert reader.read() == expected(1)
    append(active, b"\n" + line(trace(2))[:-1])
    assert reader.read() == expected(2)
    assert reader.seen == expected(0, 1, 2) and reader.feed.decode_errors == 0


@pytest.mark.parametrize("pattern", ["traces*.json", "traces.json"], ids=["backups-match", "active-only"])
def test_rotation_reads_what_was_appended_before_the_rename_and_the_new_file(tmp_path: Path, pattern: str) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path, pattern)
    append(active, line(trace(0)))
    assert reader.read() == expected(0)
    # after our read, before the rotation; the exporter writes a line and its newline apart, and timberjack may
    # rotate between the two
    append(active, line(trace(1))[:-1])
    active.rename(tmp_path / "traces-2024-01-02T03-04-05.678-size.json")  # timberjack's backup name
    append(active, b"\n" + line(trace(2)))
    assert reader.read() == expected(1, 2)
    append(active, line(trace(3)))
    assert reader.read() == expected(3)
    assert reader.seen == expected(0, 1, 2, 3)


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_compressed_rotated_backup_is_read_from_where_the_plain_file_stopped(tmp_path: Path, kind: str) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, line(trace(0)))
    assert reader.read() == expected(0)
    append(active, line(trace(1)))
    backup = tmp_path / "traces-2024-01-02T03-04-05.678.json"
    active.rename(backup)
    append(active, line(trace(2)))
    compressed = compress(backup, kind)
    assert reader.read() == expected(1, 2)
    assert reader.read() == Counter()  # the compressed backup is done: not read again
    compressed.unlink()
    assert reader.read() == Counter()
    assert reader.seen == expected(0, 1, 2) and reader.feed.decode_errors == 0


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_backup_being_compressed_beside_its_plain_file_is_not_read_twice(tmp_path: Path, kind: str) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, line(trace(0)) + line(trace(1)))
    backup = tmp_path / "traces-2024-01-02T03-04-05.678.json"
    active.rename(backup)
    data = backup.read_bytes()
    packed = gzip.compress(data) if kind == "gzip" else zstandard.ZstdCompressor().compress(data)
    target = tmp_path / f"{backup.name}.{'gz' if kind == 'gzip' else 'zst'}"
    target.write_bytes(packed[: len(packed) // 2])  # the compressor is still writing
    assert reader.read() == expected(0, 1)
    target.write_bytes(packed)
    assert reader.read() == Counter()
    backup.unlink()
    assert reader.read() == Counter()
    assert reader.seen == expected(0, 1)


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_compressed_backups_never_seen_plain_are_read_once(tmp_path: Path, kind: str) -> None:
    for n in range(2):
        path = tmp_path / f"traces-2024-01-0{n + 1}T00-00-00.000.json"
        path.write_bytes(line(trace(2 * n)) + line(trace(2 * n + 1)))
        compress(path, kind)
    reader = Reader(tmp_path)
    assert reader.read() == expected(0, 1, 2, 3)
    assert reader.read() == Counter()


def test_a_corrupt_compressed_file_is_counted_once_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(line(trace(0)))[:12] + b"\xff" * 400)
    (tmp_path / "good.json").write_bytes(line(trace(1)))
    reader = Reader(tmp_path)
    assert reader.read() == expected(1)
    assert reader.read() == Counter()
    assert reader.feed.decode_errors == 1


def test_protobuf_and_json_dumps_are_read_once(tmp_path: Path) -> None:
    (tmp_path / "dump.pb").write_bytes(request_pb(trace(0)))
    (tmp_path / "pretty.json").write_text(json.dumps(otlp_document(trace(1)), indent=2))
    (tmp_path / "compact.json").write_text(json.dumps(otlp_document(trace(2))))  # no final newline
    shutil.copy(CORPUS / "oi_openai__tool_agent" / "traces_0001.pb", tmp_path / "recorded.pb")
    reader = Reader(tmp_path)
    got = reader.read()
    recorded = keys(corpus_traces("oi_openai__tool_agent")[next(iter(corpus_traces("oi_openai__tool_agent")))])
    assert got == expected(0, 1, 2) + recorded
    assert reader.read() == Counter()
    assert reader.feed.decode_errors == 0


def test_a_dump_still_being_written_is_read_once_whole(tmp_path: Path) -> None:
    dump, pretty = tmp_path / "dump.pb", tmp_path / "pretty.json"
    data, text = request_pb(trace(0)), json.dumps(otlp_document(trace(1)), indent=2).encode()
    dump.write_bytes(data[: len(data) // 2])
    pretty.write_bytes(text[: len(text) // 2])
    reader = Reader(tmp_path)
    assert reader.read() == Counter()
    dump.write_bytes(data)
    pretty.write_bytes(text)
    assert reader.read() == expected(0, 1)
    assert reader.feed.decode_errors == 0


def test_json_lines_that_look_like_a_document_are_read_as_lines_once_it_fails(tmp_path: Path) -> None:
    (tmp_path / "traces.json").write_bytes(b"{\n" + line(trace(0)) + line(trace(1)))
    reader = Reader(tmp_path)
    assert reader.read() == Counter()  # a document being written, perhaps
    assert reader.read() == Counter()  # it did not change: JSON lines after all
    assert reader.read() == expected(0, 1)
    assert reader.feed.decode_errors == 1


def test_an_undecodable_dump_is_counted_once_its_size_stops_changing(tmp_path: Path) -> None:
    (tmp_path / "dump.pb").write_bytes(b"\x0a\xff\xff\xff\x0f" + b"\x00" * 20)
    reader = Reader(tmp_path)
    assert reader.read() == Counter() and reader.feed.decode_errors == 0
    assert reader.read() == Counter() and reader.feed.decode_errors == 1
    assert reader.read() == Counter() and reader.feed.decode_errors == 1


def test_logs_documents_are_returned_as_log_records(tmp_path: Path) -> None:
    scenario = CORPUS / "otel_genai__tool_agent_events"
    logs = json.loads((scenario / "logs_0001.json").read_text())
    (tmp_path / "logs.json").write_bytes(json.dumps(logs).encode() + b"\n" + line(trace(0)))
    shutil.copy(scenario / "logs_0001.pb", tmp_path / "logs.pb")
    reader = Reader(tmp_path)
    assert reader.read() == expected(0)
    assert len(reader.logs) > 0 and len(reader.logs) % 2 == 0  # the same records from JSON and protobuf
    assert all(log.trace_id and log.span_id for log in reader.logs)


def test_a_malformed_line_is_skipped_counted_and_the_next_ones_read(tmp_path: Path) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, line(trace(0)) + b'{"resourceSpans": [oops\n' + b'{"resourceSpans": 5}\n' + line(trace(1)))
    assert reader.read() == expected(0, 1)
    assert reader.feed.decode_errors == 2
    append(active, line(trace(2)))
    assert reader.read() == expected(2)
    assert reader.feed.decode_errors == 2


def test_a_line_over_the_cap_is_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp_files, "MAX_RECORD", 10_000)
    monkeypatch.setattr(otlp_files, "CHUNK", 1000)
    small, big = line(trace(0)[:1]), b'{"resourceSpans":[],"x":"' + b"y" * 40_000 + b'"}\n'
    assert len(small) < 10_000
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, small + big[:25_000])
    assert reader.read() == keys(trace(0)[:1])
    append(active, big[25_000:] + line(trace(1)[:1]))
    assert reader.read() == keys(trace(1)[:1])
    assert reader.feed.decode_errors == 1
    (tmp_path / "big.pb").write_bytes(record(b"\x0a" * 12_000)[:6000])  # a record over the cap, being written
    assert reader.read() == Counter() and reader.feed.decode_errors == 1
    append(tmp_path / "big.pb", b"\x0a" * 6004 + record(request_pb(trace(2)[:1])))
    assert reader.read() == keys(trace(2)[:1]) and reader.feed.decode_errors == 2
    (tmp_path / "big.json").write_text(json.dumps({"resourceSpans": [], "x": "y" * 20_000}, indent=1))
    assert reader.read() == Counter() and reader.feed.decode_errors == 3


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_a_truncated_or_replaced_file_is_read_from_its_start(tmp_path: Path, how: str) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, line(trace(0)) + line(trace(1)))
    assert reader.read() == expected(0, 1)
    inode = active.stat().st_ino
    if how == "truncated":  # the exporter without `append` truncates its file when the collector restarts
        active.write_bytes(line(trace(2)))
        assert active.stat().st_ino == inode
    else:
        (tmp_path / "next.tmp").write_bytes(line(trace(2)) + line(trace(3)) + line(trace(4)))
        os.replace(tmp_path / "next.tmp", active)
    got = reader.read()
    assert got == (expected(2) if how == "truncated" else expected(2, 3, 4))


def test_copytruncate_reads_the_copy_from_where_the_file_stopped(tmp_path: Path) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, line(trace(0)))
    assert reader.read() == expected(0)
    append(active, line(trace(1)))
    shutil.copy(active, tmp_path / "traces.json.1")  # logrotate copytruncate
    active.write_bytes(b"")
    append(active, line(trace(2)))
    assert reader.read() == expected(1, 2)
    assert reader.seen == expected(0, 1, 2)


def test_state_survives_json_and_a_new_feed_resumes_where_the_old_stopped(tmp_path: Path) -> None:
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, line(trace(0)) + line(trace(1))[:50])
    assert reader.read() == expected(0)
    reader.restart()
    append(active, line(trace(1))[50:] + line(trace(2)))
    assert reader.read() == expected(1, 2)
    reader.restart()
    assert reader.read() == Counter()
    assert set(reader.state) == {"version", "files"}


def test_limit_is_respected_and_more_says_when_to_read_again(tmp_path: Path) -> None:
    for n in range(3):
        (tmp_path / f"traces-{n}.json").write_bytes(b"".join(line(trace(4 * n + i)) for i in range(4)))
    per_trace = max(len(trace(i)) for i in range(12))
    reader, calls = Reader(tmp_path), 0
    while True:
        got = reader.read(limit=5)
        calls += 1
        assert sum(got.values()) < 5 + per_trace
        if not reader.feed.more:
            break
    assert calls > 3
    assert reader.seen == expected(*range(12))
    for n in range(3):  # files already known: skipped at the limit, kept in the state
        append(tmp_path / f"traces-{n}.json", line(trace(12 + n)))
    while True:
        got = reader.read(limit=1)
        if not reader.feed.more:
            break
    assert reader.seen == expected(*range(15))


def test_format_proto_length_prefixed_records(tmp_path: Path) -> None:
    active, reader = tmp_path / "traces.pb", Reader(tmp_path)
    second = record(request_pb(trace(1)))
    append(active, record(request_pb(trace(0))) + second[:2])
    assert reader.read() == expected(0)
    append(active, second[2:30])
    assert reader.read() == Counter()
    append(active, second[30:] + record(b"\x0a\x05junk!"))
    assert reader.read() == expected(1)
    assert reader.feed.decode_errors == 1


@pytest.mark.parametrize("encoding", ["json", "proto"])
def test_compression_zstd_compresses_each_record(tmp_path: Path, encoding: str) -> None:
    zstd = zstandard.ZstdCompressor()
    message = (lambda s: line(s)[:-1]) if encoding == "json" else request_pb
    active, reader = tmp_path / "traces.json", Reader(tmp_path)
    append(active, record(zstd.compress(message(trace(0)))))
    assert reader.read() == expected(0)
    append(active, record(zstd.compress(message(trace(1)))) + record(b"\x28\xb5\x2f\xfdbroken"))
    append(active, record(zstd.compress(message(trace(2)))))
    assert reader.read() == expected(1, 2)
    assert reader.feed.decode_errors == 1


def test_native_zstd_a_growing_stream_of_frames(tmp_path: Path) -> None:
    zstd = zstandard.ZstdCompressor()
    active, reader = tmp_path / "traces.json.zst", Reader(tmp_path)
    append(active, zstd.compress(line(trace(0)) + line(trace(1))))
    assert reader.read() == expected(0, 1)
    frame = zstd.compress(line(trace(2)))
    append(active, frame[: len(frame) // 2])
    assert reader.read() == Counter()
    append(active, frame[len(frame) // 2 :] + zstd.compress(line(trace(3))))
    assert reader.read() == expected(2, 3)
    assert reader.read() == Counter()


def test_group_by_files_in_subdirectories_and_vanished_files_forgotten(tmp_path: Path) -> None:
    for n, service in enumerate(["planner", "writer"]):  # group_by: path /dir/*/traces.json
        (tmp_path / service).mkdir()
        (tmp_path / service / "traces.json").write_bytes(line(trace(n)))
    (tmp_path / "other.txt").write_bytes(line(trace(5)))
    reader = Reader(tmp_path, "*/traces*.json")
    assert reader.read() == expected(0, 1)
    assert len(reader.state["files"]) == 2
    (tmp_path / "writer" / "traces.json").unlink()
    assert reader.read() == Counter()
    assert [e["name"] for e in reader.state["files"].values()] == ["planner/traces.json"]


def test_a_missing_directory_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as raised:
        asyncio.run(make_feed(tmp_path / "absent").read(None, 10))
    assert raised.value.kind == "io"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_appended_in_random_chunks_and_read_at_random_moments_every_span_once(data: st.DataObject) -> None:
    fingerprint = data.draw(st.sampled_from([otlp_files.FP_BYTES, 300]), label="fingerprint bytes")
    with mock.patch.object(otlp_files, "FP_BYTES", fingerprint):
        random_chunks(data)


def random_chunks(data: st.DataObject) -> None:
    """Traces written as lines, cut anywhere, rotated between lines (backups compressed or not), read between
    writes (sometimes by a new feed, with a random limit): every span once."""
    count = data.draw(st.integers(1, 6), label="traces")
    lines = [line(trace(i)) for i in range(count)]
    content = b"".join(lines)
    boundaries = {sum(map(len, lines[:i])) for i in range(count + 1)}
    cuts = data.draw(st.lists(st.integers(1, len(content) - 1), max_size=12), label="cuts")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        active, reader, rotations, pos = directory / "traces.json", Reader(directory), 0, 0
        active.touch()
        for end in [*sorted(set(cuts)), len(content)]:
            append(active, content[pos:end])
            pos = end
            if pos in boundaries and data.draw(st.booleans(), label="rotate"):
                rotations += 1
                backup = directory / f"traces-{rotations}.json"
                active.rename(backup)
                active.touch()
                kind = data.draw(st.sampled_from(["plain", "gzip", "zstd"]), label="backup")
                if kind != "plain":
                    compress(backup, kind)
            if data.draw(st.booleans(), label="read"):
                if data.draw(st.booleans(), label="restart"):
                    reader.restart()
                reader.read(limit=data.draw(st.integers(1, 50), label="limit"))
        while True:
            reader.read(limit=50)
            if not reader.feed.more:
                break
        assert reader.seen == expected(*range(count))
        assert reader.feed.decode_errors == 0
