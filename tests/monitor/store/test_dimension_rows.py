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
    lists = backend.rows("SELECT failed_evaluators, passed_evaluators FROM trace_signals ORDER BY trace_id")
    assert lists == [("|helpfulness|judge2|", "|error_free|judge|"), (None, "|error_free|")]  # a skip: no verdict

    def verdicts(evaluator: str | None, **params: object) -> dict[str, tuple]:
        read = reader.explain_rows(0.0, 1e12, {"marker": f"|{evaluator}|" if evaluator else None, **params}, 100)
        return {t: (f, p, m) for t, f, p, m in zip(read.trace_ids, read.failed, read.passed, read.matches, strict=True)}

    assert verdicts("judge2") == {"a" * 32: (1, 0, 1), "b" * 32: (0, 0, 1)}
    assert verdicts("judge", with_verdict=1) == {"a" * 32: (0, 1, 1)}  # the late judge's, appended
    assert verdicts("judge") == verdicts("judge", service="svc") and verdicts(None, service="elsewhere") == {}
    assert verdicts(None, service="elsewhere", restrict=0) == {"a" * 32: (0, 0, 0), "b" * 32: (0, 0, 0)}
    assert verdicts("helpful", with_verdict=1) == {}  # a marker is a whole name
    read = reader.explain_rows(0.0, 1e12, {}, 100)
    blob = dict(zip(read.trace_ids, read.blobs, strict=True))
    assert list(codes_of(blob["a" * 32])) == [code_of(d, v) for d, v in PAIRS] and blob["b" * 32] is None
    text = reader.explain_texts(["a" * 32, "b" * 32, "c" * 32])
    assert unpacked_text(text["a" * 32]) == list(PAIRS) and text["b" * 32] is None and "c" * 32 not in text
    assert named(code_of("tool", "calc"), text["a" * 32]) == ("tool", "calc")
    assert not read.truncated and reader.explain_rows(0.0, 1e12, {}, 1).truncated
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


def test_a_dimension_value_is_masked_like_every_stored_text_and_its_code_is_the_masked_values(backend: Backend) -> None:
    store = backend.store()
    store.write([outcome("e" * 32, row("a", False))._replace(dimensions=(("user.id", "jane.doe@example.com"),))])
    [(text,)] = backend.rows("SELECT dimension_text FROM trace_signals")
    [(dimension, value)] = unpacked_text(text)
    assert dimension == "user.id" and "jane.doe@example.com" not in value
    read = reader_of(store).explain_rows(0.0, 1e12, {}, 10)
    assert list(codes_of(read.blobs[0])) == [code_of("user.id", value)]  # named back from the masked text
    store.close()
