"""The store's state in the log under partial failure: writes that fail and succeed by turns log a few lines, not
one per alternation, and the log ends up telling the state the store is in."""

from __future__ import annotations

import logging

import pytest

from monitor.store import health as health_module
from monitor.store.health import StoreHealth
from tests.monitor.store.test_degrade import store_lines


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_store_that_fails_every_other_write_logs_a_few_lines_not_one_per_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    changes: list[bool] = []
    health = StoreHealth(on_change=changes.append, clock=clock)
    with caplog.at_level(logging.INFO):
        for _ in range(100):  # 50 s of a write failing, the next one working
            health.failed("write", "OperationalError: database is locked")
            clock.now += 0.25
            health.succeeded("write")
            clock.now += 0.25
        assert len(changes) == 200  # the gauge follows every change
        lines = store_lines(caplog)
        assert len(lines) == 2, lines  # unavailable, available again; then the failures are held
        assert lines[0].startswith("result store unavailable: write failed in the daemon: OperationalError")
        assert lines[1].startswith("result store available again")
        clock.now += health_module.FLAP_SECONDS
        health.failed("write", "OperationalError: database is locked")  # a minute on: logged, with the count
        lines = store_lines(caplog)
        assert len(lines) == 3 and "(99 more failures since the last line)" in lines[2], lines
        health.succeeded("write")
        clock.now += 1
        health.failed("write", "OperationalError: database is locked")
        health.succeeded("write")  # held again, then a quiet minute
        clock.now += health_module.FLAP_SECONDS
        health.succeeded("write")
        lines = store_lines(caplog)
        assert len(lines) == 5 and lines[4].startswith("result store available, after 1 more failures"), lines


def test_a_failure_held_while_flapping_is_logged_once_the_minute_is_over() -> None:
    clock = Clock()
    health = StoreHealth(clock=clock)
    health.failed("write", "boom")
    health.succeeded("write")
    health.failed("write", "boom")  # held: the log still says available
    assert health._logged_available
    clock.now += health_module.FLAP_SECONDS
    health.failed("write", "boom")  # the next report tells it
    assert not health._logged_available
