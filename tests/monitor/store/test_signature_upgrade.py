"""Issue 37: an upgrade of the signature algorithm (v1 → v2) changes every signature's id; a failure mode already
known under its old id (a signature of another version on the same step, seen within `resolve_after`) is not
counted new again, so the upgrade does not page with "new" signatures; a new step's failure still is."""

from __future__ import annotations

import time

from evaluators.signatures import SIGNATURE_VERSION, Failure, FailureSignature, failure_signature
from monitor.config.signatures import SignaturesConfig
from monitor.outcomes import ResultRow, TraceOutcome
from tests.support.backends import Backend
from tests.support.signature_rows import Sig, insert_signature, set_up


def v2(step_kind: str, step_name: str, error_type: str = "http_503") -> FailureSignature:
    return failure_signature("error_free", "trace", None, Failure(step_kind, step_name, error_type, "upstream down"))


def outcome(n: int, sig: FailureSignature) -> TraceOutcome:
    row = ResultRow(None, None, "gpt-4o", "error_free", "trace", 0.0, False, None, "failed", None, 0.0, sig)
    return TraceOutcome(f"{n:032x}", "shop", 0.1, True, (), (), None, None, 1, 100.0, 0.0, (row,))


def test_an_upgrade_does_not_count_known_failure_modes_new(backend: Backend) -> None:
    assert SIGNATURE_VERSION == "v2"
    set_up(backend)
    now = time.time()
    # under v1: a tool typed TOOL_ERROR, an LLM step named by its model, both seen an hour ago
    insert_signature(
        backend,
        Sig("a" * 16, "error_free", "convert_currency", "TOOL_ERROR", first_seen=now - 7200, last_seen=now - 3600),
    )
    insert_signature(
        backend,
        Sig("b" * 16, "error_free", "gpt-4o", "http_429", first_seen=now - 7200, last_seen=now - 3600, step_kind="llm"),
    )
    # and one resolved long ago
    insert_signature(
        backend, Sig("c" * 16, "error_free", "get_rates", first_seen=now - 10 * 86400, last_seen=now - 9 * 86400)
    )
    store = backend.store(signatures=SignaturesConfig(resolve_after=86400))
    try:
        store.write([outcome(1, v2("tool", "convert_currency")), outcome(2, v2("llm", "openai", "http_429"))])
        assert store.news.take() == {}  # known under v1: not new
        store.write([outcome(3, v2("tool", "refund_order"))])
        assert store.news.take() == {("error_free", "shop"): 1}  # a step that never failed: new
        store.write([outcome(4, v2("tool", "get_rates"))])
        assert store.news.take() == {("error_free", "shop"): 1}  # its v1 signature long resolved: new
    finally:
        store.close()
    versions = {row[0] for row in backend.rows("SELECT version FROM signatures")}
    assert versions == {"v1", "v2"}
