"""receivers.max_inflight_bytes: its default, its check against the largest request, one shared budget."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from monitor.config import ConfigError, load_config
from monitor.daemon import Daemon


def load(tmp_path: Path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_config(path, env={})


def test_default_budget_is_four_maximum_size_requests() -> None:
    receivers = load_config(env={}).receivers
    assert receivers.max_inflight_bytes == 64 << 20 == 4 * receivers.grpc.max_message_bytes


def test_a_budget_smaller_than_the_largest_request_is_refused_with_its_line(tmp_path: Path) -> None:
    text = """\
        receivers:
          http: {max_body_bytes: 32MiB}
          max_inflight_bytes: 20MiB
        """
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    [problem] = caught.value.problems
    assert ":3:" in problem and "receivers.max_inflight_bytes" in problem and "http.max_body_bytes" in problem


def test_a_disabled_receiver_does_not_count(tmp_path: Path) -> None:
    text = """\
        receivers:
          http: {enabled: false, max_body_bytes: 32MiB}
          max_inflight_bytes: 16MiB
        """
    assert load(tmp_path, text).receivers.max_inflight_bytes == 16 << 20


def test_the_daemon_gives_the_grpc_receiver_its_one_budget(tmp_path: Path) -> None:
    config = load(tmp_path, "receivers: {max_inflight_bytes: 20MiB}\nstore: {enabled: false}\n")
    daemon = Daemon(config)
    assert daemon.grpc is not None and daemon.grpc.inflight is daemon.inflight
    assert daemon.inflight.limit_bytes == 20 << 20


def test_read_timeouts_read_slots_and_pending_bytes_reach_the_receivers_and_the_assembler(tmp_path: Path) -> None:
    defaults = load_config(env={})
    assert defaults.receivers.read_timeout == 10 and defaults.receivers.read_idle_timeout == 5
    assert defaults.receivers.grpc.max_concurrent_reads == 8
    assert defaults.assembly.max_pending_bytes == 128 << 20
    text = """\
        receivers:
          grpc: {max_concurrent_reads: 3}
          read_timeout: 7s
          read_idle_timeout: 2s
        assembly: {max_pending_bytes: 64MiB}
        store: {enabled: false}
        """
    daemon = Daemon(load(tmp_path, text))
    assert daemon.grpc is not None and daemon.http is not None
    assert daemon.grpc.read_timeout == 7 and daemon.grpc.reads.limit == 3
    assert daemon.http.handler.read_timeout == 7 and daemon.http.handler.idle_timeout == 2
    assert daemon.assembler.max_pending_bytes == 64 << 20
