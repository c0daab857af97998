"""The agreement figures of /api/v1/evaluators (monitor/review/agreement_cache.py): computed on a worker thread
(the caller gets the figures last computed, never waits on the store), recomputed after `ttl` or a review written,
the previous figures kept when a read fails; and shown per evaluator by `evaluator_infos` (None: never reviewed)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from evaluators.sdk import builtin
from monitor.engine.configured import ConfiguredEvaluator
from monitor.metrics import MetricsExporter
from monitor.review.agreement_cache import AgreementCache
from monitor.store.reviews import StoredReview
from monitor.web.evaluator_info import evaluator_infos


def review(evaluator: str, passed: bool | None, agreement: str, at: float = 1.0) -> StoredReview:
    return StoredReview("r", "ab" * 16, evaluator, "trace", "", None, None, passed, None, None, agreement,  # type: ignore[arg-type]
                        None, None, None, "ann", at, None, None)  # fmt: skip


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "not within 10 s"
        time.sleep(0.01)


def test_the_figures_come_from_a_worker_thread_and_are_recomputed_after_ttl_or_a_review() -> None:
    reviews = [review("faithful", False, "agree"), review("faithful", False, "disagree")]
    gate, reads, now = threading.Event(), [], [0.0]

    def read() -> list[StoredReview]:
        reads.append(threading.current_thread().name)
        gate.wait(10)
        return list(reviews)

    cache = AgreementCache(read, ttl=5.0, clock=lambda: now[0])
    assert cache.current() == {}  # the read is under way on its thread, blocked: the caller does not wait
    until(lambda: len(reads) == 1)
    assert reads == ["agreement-figures"] and cache.current() == {}  # one read at a time
    gate.set()
    until(lambda: "faithful" in cache.current())
    share = cache.current()["faithful"].alarm_precision
    assert (share.confirmed, share.reviewed) == (1, 2)

    reviews.append(review("faithful", True, "agree", at=2.0))
    now[0] = 4.9
    assert cache.current()["faithful"].pass_confirmation.reviewed == 0 and len(reads) == 1  # fresh for 5 s
    cache.invalidate()  # a review written
    cache.current()
    until(lambda: cache.current()["faithful"].pass_confirmation.reviewed == 1)
    assert len(reads) == 2 and cache.current()["faithful"].last_reviewed_at == 2.0
    now[0] = 10.0
    cache.current()
    until(lambda: len(reads) == 3)


def test_a_failed_read_keeps_the_previous_figures() -> None:
    failing = [False]

    def read() -> list[StoredReview]:
        if failing[0]:
            raise OSError("disk gone")
        return [review("faithful", True, "agree")]

    cache = AgreementCache(read, ttl=0.0)
    assert cache.refresh()["faithful"].pass_confirmation.confirmed == 1
    failing[0] = True
    assert cache.refresh()["faithful"].pass_confirmation.confirmed == 1


def test_evaluator_infos_carry_the_agreement_of_reviewed_evaluators_only() -> None:
    cache = AgreementCache(lambda: [review("errors", False, "disagree"), review("errors", None, "agree")])
    figures = cache.refresh()
    alerted = ConfiguredEvaluator(builtin("error_free"), "errors", 1.0, None)
    plain = ConfiguredEvaluator(builtin("error_free"), "error_free", 1.0, None)
    info, other = evaluator_infos([alerted, plain], MetricsExporter().results, figures)
    assert info.agreement is not None and other.agreement is None
    assert (info.agreement.reviews, info.agreement.skips_reviewed) == (2, 1)
    assert (info.agreement.alarm_precision.confirmed, info.agreement.alarm_precision.reviewed) == (0, 1)
    assert info.agreement.alarm_precision.upper is not None and info.agreement.alarm_precision.lower == 0.0
    assert evaluator_infos([alerted], MetricsExporter().results)[0].agreement is None  # no figures given
