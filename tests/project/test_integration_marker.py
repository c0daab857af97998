"""The `integration` marker is derived from the fixtures a test uses and enforced while it runs (tests/markers.py):
a test that starts a process or a server without it fails, naming what it started."""

from __future__ import annotations

import pytest

from tests.conftest import PROJECT_ROOT

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.integration  # each test runs pytest in a subprocess

CONFTEST = """
import pytest
from tests.markers import pytest_collection_modifyitems, pytest_configure, pytest_runtest_setup, pytest_runtest_teardown

@pytest.fixture
def postgres_url():
    return "postgresql://127.0.0.1/none"
"""

TESTS = """
import socket, subprocess, sys, pytest

def listen():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()

def test_listens():
    listen()

def test_runs_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

@pytest.mark.integration
def test_marked_and_listens():
    listen()

def test_on_a_server_fixture(postgres_url):
    listen()

def test_in_memory():
    assert sum(range(3)) == 3

def test_looks_up_a_shared_library():  # ctypes.util runs ldconfig: an import's side effect, not a started process
    import ctypes.util
    assert ctypes.util.find_library("c")
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(PROJECT_ROOT))
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nmarkers = integration: starts a process, a server or a browser\n")
    pytester.makepyfile(test_started=TESTS)
    return pytester


def test_a_test_that_starts_a_server_or_a_process_unmarked_fails_naming_what_it_started(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=6, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*test_listens started a server listening on ('127.0.0.1', *) without the `integration` marker*",
            "*test_runs_a_process started the process * without the `integration` marker*",
        ]
    )


def test_a_test_on_a_server_fixture_is_marked_and_the_fast_run_leaves_it_out(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-m", "not integration")
    result.assert_outcomes(passed=4, errors=2, deselected=2)
