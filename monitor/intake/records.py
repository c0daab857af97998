"""The intake log's on-disk format. A segment file is `SEGMENT_MAGIC` then records; a record is a 20-byte header
(payload length u32, CRC32 of the rest of the header and the payload u32, encoding u8, signal u8, receiver u8,
flags u8, Unix time f64; little-endian) then the request bytes as they were received (decompressed). A torn or
corrupt record (a crash mid-write) ends what is read of its segment: its length or CRC says so."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SEGMENT_MAGIC = b"AMWAL1\n\x00"
SUFFIX = ".wal"
HEADER = struct.Struct("<IIBBBBd")
MAX_RECORD_BYTES = 1 << 30  # a length past this is corruption, not a request
ENCODINGS = ("protobuf", "json")
SIGNALS = ("traces", "logs")
RECEIVERS = ("grpc", "http")


@dataclass(frozen=True, slots=True)
class Record:
    payload: bytes
    encoding: str
    signal: str
    receiver: str
    time: float


def encode(record: Record) -> bytes:
    """The record as written: header and payload."""
    meta = HEADER.pack(
        len(record.payload),
        0,
        _code(ENCODINGS, record.encoding),
        _code(SIGNALS, record.signal),
        _code(RECEIVERS, record.receiver),
        0,
        record.time,
    )[8:]
    crc = zlib.crc32(record.payload, zlib.crc32(meta))
    return struct.pack("<II", len(record.payload), crc) + meta + record.payload


def framed_size(record: Record) -> int:
    """The bytes `encode(record)` takes, without encoding it."""
    return HEADER.size + len(record.payload)


def _code(names: tuple[str, ...], name: str) -> int:
    return names.index(name) if name in names else 255


def _name(names: tuple[str, ...], code: int) -> str:
    return names[code] if code < len(names) else "other"


@dataclass(slots=True)
class SegmentRead:
    records: list[Record]
    torn: bool  # the segment ended in a torn or corrupt record (or a bad magic): the rest was skipped


def read_segment(data: bytes) -> SegmentRead:
    """Every whole record of a segment's bytes, in order, up to the first torn or corrupt one."""
    records, end = [], len(SEGMENT_MAGIC)
    for after, record in _scan(data):
        records.append(record)
        end = after
    return SegmentRead(records, data[: len(SEGMENT_MAGIC)] != SEGMENT_MAGIC or end != len(data))


def _scan(data: bytes) -> Iterator[tuple[int, Record]]:
    """(offset after the record, record) for each whole record."""
    if data[: len(SEGMENT_MAGIC)] != SEGMENT_MAGIC:
        return
    offset, size = len(SEGMENT_MAGIC), HEADER.size
    while offset + size <= len(data):
        length, crc, encoding, signal, receiver, _, when = HEADER.unpack_from(data, offset)
        end = offset + size + length
        if length > MAX_RECORD_BYTES or end > len(data):
            return
        payload = data[offset + size : end]
        if zlib.crc32(payload, zlib.crc32(data[offset + 8 : offset + size])) != crc:
            return
        offset = end
        yield end, Record(payload, _name(ENCODINGS, encoding), _name(SIGNALS, signal), _name(RECEIVERS, receiver), when)


def segment_name(segment: int) -> str:
    return f"{segment:020d}{SUFFIX}"


def segments_in(directory: Path) -> list[tuple[int, Path]]:
    """The segment files of a directory, oldest first."""
    found = []
    for path in directory.glob(f"*{SUFFIX}"):
        stem = path.name[: -len(SUFFIX)]
        if stem.isdigit():
            found.append((int(stem), path))
    return sorted(found)
