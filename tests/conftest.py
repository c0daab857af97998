"""Shared fixtures: the recorded corpus (tests/fixtures/corpus), the PostgreSQL and Phoenix servers, check-config."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.markers import (  # noqa: F401  (hooks: the derived, enforced integration marker)
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)

# Hypothesis' per-example deadline (200 ms) and its too-slow health check are timing assertions: on a loaded CI
# host they fail tests whose properties hold. Examples are bounded by their own max_examples instead.
settings.register_profile("agent-monitor", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agent-monitor")

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CORPUS = PROJECT_ROOT / "tests" / "fixtures" / "corpus"


def corpus_scenarios() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if (p / "expected.json").is_file())


@pytest.fixture(autouse=True)
def _intake_log_per_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The intake log is on by default, next to `store.path`: an in-process daemon left on the default relative
    path (`data/results.db`: a PostgreSQL or disabled store) would log into the checkout's `data/intake/`, and the
    next such test would replay what it left. Here each test's default directory is its own."""
    from monitor.config.intake import WalConfig

    resolve = WalConfig.directory
    own = tmp_path_factory.mktemp("intake")

    def directory(self: WalConfig, store_path: str) -> Path:
        if not self.path and not Path(store_path).is_absolute():
            return own
        return resolve(self, store_path)

    monkeypatch.setattr(WalConfig, "directory", directory)


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the recorded corpus is missing: expected it at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on loopback for the whole session (tests/support/pgserver.py)."""
    from tests.support.pgserver import running_server

    with running_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The URL of a fresh, empty database on the session's PostgreSQL server."""
    return postgres_server.new_database()


@pytest.fixture(scope="session")
def phoenix():
    """A real Phoenix server (tests/support/phoenix_server.py) for the whole session: its base URL."""
    from tests.support.phoenix_server import phoenix_server

    with phoenix_server() as url:
        yield url


@pytest.fixture
def check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[[str], tuple[int, str, str, Path]]:
    """check-config on a config text: (exit code, stdout, stderr, path). For the config tests and the pattern
    checks of tests/project."""
    from monitor.commands import check_config
    from tests.monitor.config.test_config import write

    def run(text: str) -> tuple[int, str, str, Path]:
        path = write(tmp_path, text)
        code = check_config.run(argparse.Namespace(path=str(path), no_env=True))
        out, err = capsys.readouterr()
        return code, out, err, path

    return run
