"""The intake log's record format: whole records read back in order; a torn or corrupt tail (a crash mid-write)
ends the segment's read at the last whole record, flagged, never raising."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.intake.records import SEGMENT_MAGIC, Record, encode, read_segment

PAYLOADS = st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=8)


def _segment(payloads: list[bytes]) -> tuple[bytes, list[int], list[Record]]:
    """The segment's bytes, the offset after each record, the records."""
    records = [Record(p, "protobuf" if i % 2 else "json", "traces", "grpc", 1.5 + i) for i, p in enumerate(payloads)]
    data, ends = bytearray(SEGMENT_MAGIC), []
    for record in records:
        data += encode(record)
        ends.append(len(data))
    return bytes(data), ends, records


def test_records_read_back_in_order_with_their_fields() -> None:
    data, _, records = _segment([b"first", b"", b"third" * 100])
    read = read_segment(data)
    assert read.records == records
    assert not read.torn


@settings(max_examples=200, deadline=None)
@given(PAYLOADS, st.data())
def test_a_truncated_tail_keeps_every_whole_record_before_it(payloads: list[bytes], data: st.DataObject) -> None:
    segment, ends, records = _segment(payloads)
    cut = data.draw(st.integers(min_value=0, max_value=len(segment)))
    read = read_segment(segment[:cut])
    whole = sum(1 for end in ends if end <= cut)
    assert read.records == records[:whole]
    assert read.torn == (cut not in (len(SEGMENT_MAGIC), *ends))


@settings(max_examples=200, deadline=None)
@given(PAYLOADS, st.data())
def test_a_corrupt_byte_ends_the_read_at_the_record_it_is_in(payloads: list[bytes], data: st.DataObject) -> None:
    segment, ends, records = _segment(payloads)
    at = data.draw(st.integers(min_value=len(SEGMENT_MAGIC), max_value=len(segment) - 1))
    flip = data.draw(st.integers(min_value=1, max_value=255))
    corrupt = bytearray(segment)
    corrupt[at] ^= flip
    read = read_segment(bytes(corrupt))
    before = sum(1 for end in ends if end <= at)  # records wholly before the corrupt byte
    assert read.records == records[:before]
    assert read.torn


def test_a_file_that_is_not_a_segment_reads_as_torn_and_empty() -> None:
    read = read_segment(b"garbage that is not a segment")
    assert read.records == []
    assert read.torn
