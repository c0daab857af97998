"""The drift job on a real SQLite store: its buckets are kept in the store and read back (a restart or another
replica reads no trace row again for them and makes the same report), the trailing window is read only while a
signal lacks its same hours, a store that fails keeps the last report and counts the failure, and a change's
`since` survives a restart."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from monitor.config.drift import DriftConfig
from monitor.detection.job import DriftJob
from monitor.detection.model import DriftReport
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store.health import StoreUnavailable
from tests.support.drift_harness import store_with
from tests.support.drift_rows import SyntheticTrace, write_traces
from tests.support.drift_scenarios import SCENARIOS

CONFIG = DriftConfig()


def _job(path: Path, published: list[DriftReport] | None = None) -> tuple[DriftJob, SQLiteReviewReader]:
    reader = SQLiteReviewReader.open(path)
    sink = published.append if published is not None else (lambda report: None)
    return DriftJob(CONFIG, reader, sink), reader


def _figures(report: DriftReport) -> list[tuple]:
    return [(s.signal, s.subject, s.baseline, s.recent, s.effect, s.q_value, s.since) for s in report.signals]


def test_a_restarted_job_reads_its_buckets_back_and_makes_the_same_report(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    change_at = store_with(path, SCENARIOS["error_rate_1_to_5_percent"], history_days=2, hours_after=1)
    as_of = change_at + 3600
    first, reader = _job(path)
    report = first.report(as_of)
    reads = first._buckets.reads + first._trailing.reads
    reader.close()
    assert reads > 0 and any(s.active and s.signal == "error_rate" for s in report.signals)
    kept = sqlite3.connect(path).execute("SELECT count(*) FROM drift_buckets").fetchone()[0]
    fresh = CONFIG.keep_after // CONFIG.interval  # the buckets that ended within keep_after: not kept yet
    assert kept == reads - fresh

    again, reader = _job(path)  # a restart, or another replica on the same store
    same = again.report(as_of)
    reader.close()
    assert again._buckets.reads == fresh and again._trailing.reads == 0  # no other trace row read again
    assert _figures(same) == _figures(report)  # its since too: the episode was kept


def test_a_trace_written_late_into_a_bucket_read_early_counts_once_the_bucket_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    change_at = store_with(path, SCENARIOS["stationary"], history_days=1, hours_after=1)
    job, reader = _job(path)
    as_of = change_at + 3600
    before = job.report(as_of)
    late = SyntheticTrace(created_at=as_of - 60, service="shop", agent="planner", has_error=True, duration_ms=1.0)
    write_traces(str(path), [late] * 1)  # e.g. a write retried: stored after the report read its bucket
    later = as_of + CONFIG.keep_after
    report = job.report(later)
    reader.close()
    error_rate = next(s for s in report.signals if s.signal == "error_rate")
    assert error_rate.recent.n == _recent_traces(path, later)  # the late trace is in the recent window now
    kept = (
        sqlite3.connect(path)
        .execute(
            "SELECT aggregates FROM drift_buckets WHERE start = ? AND size = ?",
            (as_of - CONFIG.interval, CONFIG.interval),
        )
        .fetchone()
    )
    assert kept is not None and before.as_of == as_of


def _recent_traces(path: Path, as_of: float) -> int:
    query = "SELECT count(*) FROM trace_signals WHERE created_at >= ? AND created_at < ?"
    return int(sqlite3.connect(path).execute(query, (as_of - CONFIG.recent, as_of)).fetchone()[0])


def test_the_trailing_window_is_read_only_while_the_same_hours_lack_samples(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    change_at = store_with(path, SCENARIOS["stationary"], history_days=2, hours_after=0.5)
    young, reader = _job(path)
    young.report(change_at - 2 * 86400 + 3600)  # an hour after the history began: no same hours yet
    assert young._trailing.reads > 0
    reader.close()
    old, reader = _job(path)
    report = old.report(change_at)
    reader.close()
    assert old._trailing.reads == 0
    assert {s.baseline_kind.value for s in report.signals if s.p_value is not None} == {"same_hours"}


class _FailingReads:
    """The store's reads, failing on demand (a store that is down)."""

    def __init__(self, reader: SQLiteReviewReader) -> None:
        self.reader, self.down = reader, False

    def __getattr__(self, name: str) -> object:
        method = getattr(self.reader, name)

        def call(*args: object) -> object:
            if self.down:
                raise StoreUnavailable("the store is down")
            return method(*args)

        return call


def test_a_store_that_fails_keeps_the_last_report_and_counts_the_failure(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    change_at = store_with(path, SCENARIOS["stationary"], history_days=1, hours_after=0.5)
    reads = _FailingReads(SQLiteReviewReader.open(path))
    now = [change_at + CONFIG.settle]
    published: list[DriftReport] = []
    failures: list[float | None] = []
    job = DriftJob(CONFIG, reads, published.append, failed=lambda: failures.append(None), clock=lambda: now[0])

    async def scenario() -> tuple[DriftReport | None, DriftReport | None, DriftReport | None]:
        good = await job.run_once()
        now[0] += CONFIG.interval
        reads.down = True
        failed = await job.run_once()
        reads.down = False
        recovered = await job.run_once()
        return good, failed, recovered

    good, failed, recovered = asyncio.run(scenario())
    reads.reader.close()
    assert good is not None and failed is None and len(failures) == 1
    assert recovered is not None and recovered.as_of == good.as_of + CONFIG.interval
    assert [r.as_of for r in published] == [good.as_of, recovered.as_of]
    assert job.latest is recovered
