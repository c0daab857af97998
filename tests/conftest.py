"""Shared fixtures: the recorded corpus, copied into the project (tests/fixtures/corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CORPUS = PROJECT_ROOT / "tests" / "fixtures" / "corpus"


def corpus_scenarios() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if (p / "expected.json").is_file())


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the recorded corpus is missing: expected it at {CORPUS}")
    return CORPUS
