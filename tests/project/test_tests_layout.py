"""tests/ mirrors the packages: the tests of `monitor/x` are in tests/monitor/x/ and those of `evaluators/x` in
tests/evaluators/x/ (a top-level module's directly in tests/monitor/ or tests/evaluators/, named after it), and
every other test is in one of the few folders that check no single package (CONTRIBUTING.md, "Where a test goes")."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
MIRRORS = ("evaluators", "monitor")  # tests/<package>/... mirrors <package>/...
# The top-level folders that mirror no package, and what goes in them.
OTHERS = {
    "project": "checks of the whole project: layering, size, names, docs, the Makefile, the Dockerfile, this layout",
    "integration": "the real daemon end to end",
    "deploy": "deploy/: compose, Kubernetes, the dashboards, Argo Rollouts",
    "corpus": "every recorded scenario read as its README states it",
    "bench": "the benchmarks (`make bench`), no test",
    "support": "helpers shared by several folders, no test",
    "fixtures": "data files (the recorded corpus, client errors)",
}
NO_TESTS = {"bench", "support", "fixtures"}


def _skipped(rel: Path) -> bool:
    """Caches: __pycache__, .hypothesis and the like."""
    return any(part == "__pycache__" or part.startswith(".") for part in rel.parts)


def _is_cache(path: Path) -> bool:
    return _skipped(path.relative_to(TESTS))


def _folders() -> list[Path]:
    """Every folder of tests/ but the data in tests/fixtures and caches."""
    found = [TESTS]
    for path in sorted(TESTS.rglob("*")):
        rel = path.relative_to(TESTS)
        if path.is_dir() and rel.parts[0] != "fixtures" and not _is_cache(path):
            found.append(path)
    return found


def _test_files() -> list[Path]:
    return [p for p in sorted(TESTS.rglob("test_*.py")) if not _is_cache(p)]


def layout_problems(tests: Path, root: Path) -> list[str]:
    """What is out of place under `tests` (the tests/ of the checkout at `root`), one line each."""
    problems = []
    for folder in [tests, *sorted(p for p in tests.rglob("*") if p.is_dir())]:
        rel = folder.relative_to(tests)
        if rel.parts[:1] == ("fixtures",) or _skipped(rel):
            continue
        name = f"tests/{rel.as_posix()}".rstrip("/.")
        if not (folder / "__init__.py").is_file():
            problems.append(f"{name} has no __init__.py (the suite imports its helpers as tests.x.y)")
        if len(rel.parts) == 1 and rel.parts[0] not in MIRRORS and rel.parts[0] not in OTHERS:
            problems.append(f"{name} mirrors no package and is none of {sorted(OTHERS)}")
        if len(rel.parts) > 1 and rel.parts[0] in MIRRORS:
            source = root.joinpath(*rel.parts)
            if not source.is_dir() and not source.with_suffix(".py").is_file():
                problems.append(
                    f"{name} names no package or module: there is no {rel.as_posix()}/ or {rel.as_posix()}.py"
                )
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        if _skipped(rel):
            continue
        if len(rel.parts) == 1:
            problems.append(f"tests/{rel.as_posix()} sits at the top of tests/: put it in the folder of what it tests")
        elif rel.parts[0] in NO_TESTS:
            problems.append(f"tests/{rel.as_posix()}: tests/{rel.parts[0]} holds {OTHERS[rel.parts[0]]}")
        elif rel.parts[0] in MIRRORS and len(rel.parts) == 2:
            modules = [m.stem for m in (root / rel.parts[0]).glob("*.py") if m.stem != "__init__"]
            subject = path.stem.removeprefix("test_")
            if not any(subject == m or subject.startswith(m + "_") for m in modules):
                problems.append(
                    f"tests/{rel.as_posix()} is directly in tests/{rel.parts[0]}/, kept for the tests of a top-level "
                    f"module (test_<module>*.py), and names none: {sorted(modules)}"
                )
    return problems


def test_every_test_is_where_the_layout_puts_it() -> None:
    assert layout_problems(TESTS, ROOT) == []


def test_no_two_test_files_share_a_name() -> None:
    seen: dict[str, list[str]] = {}
    for path in _test_files():
        seen.setdefault(path.name, []).append(path.relative_to(ROOT).as_posix())
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_the_layout_check_finds_this_tree() -> None:
    """It walks what exists: the folders it checks hold the suite's own test files."""
    folders = {f.relative_to(TESTS).as_posix() for f in _folders()}
    assert {"monitor/store", "monitor/web/pages", "evaluators/traces/conventions", "project"} <= folders
    assert Path(__file__).resolve() in _test_files()


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout with monitor/store/, monitor/daemon.py and evaluators/sdk/, and a tests/ laid out right."""
    root = tmp_path
    for module in ("monitor/__init__.py", "monitor/daemon.py", "monitor/store/__init__.py", "evaluators/sdk/x.py"):
        (root / module).parent.mkdir(parents=True, exist_ok=True)
        (root / module).write_text("")
    for test in ("monitor/store/test_store.py", "monitor/test_daemon_start.py", "evaluators/sdk/test_x.py"):
        add(root / "tests", test)
    return root / "tests", root


def add(tests: Path, path: str) -> None:
    """The file at `path` under `tests`, with an __init__.py in each folder on the way."""
    folder = tests
    for part in Path(path).parent.parts:
        (folder / "__init__.py").parent.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").touch()
        folder = folder / part
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").touch()
    (tests / path).write_text("")


def test_a_right_tree_has_no_problem(tree: tuple[Path, Path]) -> None:
    assert layout_problems(*tree) == []


def test_a_resurrected_catch_all_folder_fails(tree: tuple[Path, Path]) -> None:
    tests, root = tree
    add(tests, "unit/test_something.py")
    assert layout_problems(tests, root) == [
        f"tests/unit mirrors no package and is none of {sorted(OTHERS)}",
    ]


def test_a_folder_naming_no_package_or_module_fails(tree: tuple[Path, Path]) -> None:
    tests, root = tree
    add(tests, "monitor/results/test_store.py")
    add(tests, "evaluators/sdk/gone/test_y.py")
    assert layout_problems(tests, root) == [
        "tests/evaluators/sdk/gone names no package or module: there is no evaluators/sdk/gone/ or "
        "evaluators/sdk/gone.py",
        "tests/monitor/results names no package or module: there is no monitor/results/ or monitor/results.py",
    ]


def test_a_folder_named_after_a_module_is_accepted(tree: tuple[Path, Path]) -> None:
    tests, root = tree
    add(tests, "monitor/daemon/test_idle.py")
    assert layout_problems(tests, root) == []


def test_a_folder_without_init_fails(tree: tuple[Path, Path]) -> None:
    tests, root = tree
    (tests / "monitor" / "store" / "__init__.py").unlink()
    assert layout_problems(tests, root) == [
        "tests/monitor/store has no __init__.py (the suite imports its helpers as tests.x.y)",
    ]


def test_tests_out_of_their_folders_fail(tree: tuple[Path, Path]) -> None:
    tests, root = tree
    (tests / "test_loose.py").write_text("")
    add(tests, "support/test_helper.py")
    add(tests, "monitor/test_something_else.py")
    assert layout_problems(tests, root) == [
        "tests/monitor/test_something_else.py is directly in tests/monitor/, kept for the tests of a top-level "
        "module (test_<module>*.py), and names none: ['daemon']",
        "tests/support/test_helper.py: tests/support holds helpers shared by several folders, no test",
        "tests/test_loose.py sits at the top of tests/: put it in the folder of what it tests",
    ]
