"""Explanations' rows of a stored trace (store/signal_writes.py, dimension_reads.py): its dimension codes and their
text, and its verdict lists, written with its trace on both databases, a late judge's verdict appended, and read
back by range, service and signature through the review reader."""

from __future__ import annotations

from monitor.outcomes import LateResults
from monitor.review.of_store import reader_of
from monitor.store.dimension_codes import code_of, codes_of, named, unpacked_text
from monitor.store.signal_writes import verdict_lists
from tests.monitor.store.test_signatures_store import signature
from tests.support.backends import Backend
from tests.support.store_builders import outcome, row

PAIRS = (("model", "gemini-2.5-pro"), ("tool", "search"), ("tool", "calc"), ("tenant.id", "acme"))


def test_a_trace_keeps_its_dimensions_and_verdicts_and_a_late_judge_adds_its_own(backend: Backend) -> None:
    store = backend.store()
    first = outcome("a" * 32, row("helpfulness", False), row("error_free", True), row("slow", None, "timeout"))
    store.write([first._replace(dimensions=PAIRS), outcome("b" * 32, row("error_free", True))])
    store.write([LateResults("a" * 32, "svc", (row("judge", True), row("judge2", False)))])
    reader = reader_of(store)
    read = reader.explain_rows(0.0, 1e12, None, 100)
    by_id = dict(zip(read.trace_ids, zip(read.blobs, read.texts, read.failed, read.passed, strict=True), strict=True))
    blob, text, failed, passed = by_id["a" * 32]
    assert list(codes_of(blob)) == [code_of(d, v) for d, v in PAIRS]
    assert unpacked_text(text) == list(PAIRS)
    assert named(code_of("tool", "calc"), text) == ("tool", "calc")
    assert failed == "|helpfulness|judge2|" and passed == "|error_free|judge|"  # a skip is no verdict
    assert by_id["b" * 32] == (None, None, None, "|error_free|")
    assert reader.explain_rows(0.0, 1e12, "elsewhere", 100).trace_ids == []
    assert not read.truncated and reader.explain_rows(0.0, 1e12, None, 1).truncated
    store.close()


def test_a_signature_reads_back_its_failing_traces(backend: Backend) -> None:
    store = backend.store()
    signed = row("error_free", False)._replace(signature=signature())
    store.write([outcome("c" * 32, signed), outcome("d" * 32, row("error_free", False))])
    reader = reader_of(store)
    [(signature_id,)] = backend.rows("SELECT signature FROM results WHERE signature IS NOT NULL")
    assert reader.signature_trace_ids(signature_id, 0.0, 1e12, 100) == {"c" * 32}
    assert reader.signature_trace_ids(signature_id, 0.0, 1.0, 100) == set()
    store.close()


def test_verdict_lists_put_a_failure_first_and_escape_the_separator() -> None:
    rows = [row("a|b", False), row("a|b", True), row("c", True), row("d", None, "error")]
    assert verdict_lists(rows) == ("|a¦b|", "|c|")
    assert verdict_lists([]) == (None, None)
