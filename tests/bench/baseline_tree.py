"""A baseline commit's tree and its own virtual environment, for bench_ab_baseline.py.

`prepare(ref)` resolves `ref` in this clone, extracts the commit (`git archive`) into
`.cache/bench-baseline/<sha>/src` and installs it, runtime dependencies only, into `.cache/bench-baseline/<sha>/venv`
(`python -m venv` + `pip install -e src`), its dependencies constrained to the versions this interpreter's venv has
(`pip freeze`): the A/B then measures the code, not a release of grpcio or protobuf that came out in between (when
the baseline cannot have them, it installs unconstrained and says so). Both are kept: a later run reuses the venv
when its stamp file matches (sha, interpreter version, source path, those versions), so only the first run pays.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "bench-baseline"
STAMP_NAME = ".bench-baseline-stamp"
INSTALL_TIMEOUT = 1200.0  # seconds: a cold pip install of the runtime dependencies


class BaselineError(Exception):
    """The baseline tree or its venv cannot be had (the ref is not in this clone, an install failed)."""


@dataclass(frozen=True)
class BaselineTree:
    """A baseline commit extracted under the cache, and the interpreter of its venv."""

    ref: str
    sha: str
    src: Path
    python: Path


def resolve(ref: str, repo: Path = ROOT) -> str:
    """The full sha of the commit `ref` names in `repo`; BaselineError when the clone lacks it."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0 or not found.stdout.strip():
        raise BaselineError(
            f"the baseline ref {ref!r} is not a commit in this clone ({repo}): a shallow or fresh clone may lack "
            "its objects. Fetch it (git fetch --unshallow, or git fetch origin <sha>) or set BENCH_BASELINE_REF "
            "to a commit this clone has."
        )
    return found.stdout.strip()


def stamp_text(sha: str, python_version: str, src: Path, pins: str) -> str:
    """What a venv's stamp file holds: it is reused only for this sha, interpreter, source directory and pins."""
    digest = hashlib.sha256(pins.encode()).hexdigest()[:16]
    return f"sha {sha}\npython {python_version}\nsrc {src}\npins {digest}\n"


def pins_of(freeze: str) -> str:
    """The `name==version` lines of a `pip freeze` output (no editable or URL installs, not agent-monitor itself)."""
    lines = (line.strip() for line in freeze.splitlines())
    return "".join(f"{line}\n" for line in lines if "==" in line and not line.lower().startswith("agent-monitor=="))


def current_pins() -> str:
    """This interpreter's installed versions, as constraints for the baseline's venv."""
    command = [sys.executable, "-m", "pip", "freeze", "--exclude-editable"]
    return pins_of(subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout)


def stamp_matches(venv: Path, expected: str) -> bool:
    """Whether `venv` was completely installed for `expected` (a stamp_text): the stamp is written last."""
    stamp = venv / STAMP_NAME
    try:
        return stamp.read_text(encoding="utf-8") == expected and (venv / "bin" / "python").exists()
    except OSError:
        return False


def extract(sha: str, src: Path, repo: Path = ROOT) -> None:
    """`git archive` of `sha` into `src` (through a partial directory renamed at the end: never half a tree)."""
    if (src / "pyproject.toml").exists():
        return
    partial = src.with_name(src.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", "--format=tar", sha], cwd=repo, stdout=subprocess.PIPE)
    assert archive.stdout is not None
    try:
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            tar.extractall(partial, filter="data")
    finally:
        archive.stdout.close()
        code = archive.wait(timeout=60)
    if code != 0:
        raise BaselineError(f"git archive {sha} failed (exit {code})")
    partial.rename(src)


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)


def install(src: Path, venv: Path, stamp: str, pins: str) -> None:
    """A fresh venv at `venv` with `src` installed editable (its runtime dependencies only, constrained to `pins`
    when the baseline accepts them), then the stamp."""
    shutil.rmtree(venv, ignore_errors=True)
    print(f"  building the baseline venv {venv.relative_to(ROOT)} (once; pip install -e)", flush=True)
    made = _run([sys.executable, "-m", "venv", str(venv)])
    if made.returncode != 0:
        raise BaselineError(f"python -m venv {venv} failed (exit {made.returncode}):\n{made.stderr[-3000:]}")
    constraints = venv / "constraints.txt"
    constraints.write_text(pins, encoding="utf-8")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    done = _run([*pip, "-c", str(constraints), "-e", str(src)])
    if done.returncode != 0:
        print("  the baseline cannot have this venv's versions of its dependencies: installing them unconstrained")
        print("  (the A/B then measures dependency releases too):\n" + done.stderr[-1000:], flush=True)
        done = _run([*pip, "-e", str(src)])
    if done.returncode != 0:
        raise BaselineError(f"pip install -e {src} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    (venv / STAMP_NAME).write_text(stamp, encoding="utf-8")


def prepare(ref: str, cache: Path = CACHE, repo: Path = ROOT) -> BaselineTree:
    """The baseline tree of `ref` and its venv, built on first use and reused while the stamp matches."""
    sha = resolve(ref, repo)
    src, venv = cache / sha / "src", cache / sha / "venv"
    extract(sha, src, repo)
    version = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    pins = current_pins()
    stamp = stamp_text(sha, version, src, pins)
    if not stamp_matches(venv, stamp):
        install(src, venv, stamp, pins)
    return BaselineTree(ref, sha, src, venv / "bin" / "python")


def imported_from(python: Path | str, env: dict[str, str], cwd: Path) -> Path:
    """The directory `monitor` is imported from by `python` with `env`: which tree a daemon will really run."""
    done = subprocess.run(
        [str(python), "-c", "import evaluators, monitor; print(monitor.__file__)"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise BaselineError(f"{python} cannot import monitor:\n{done.stderr[-2000:]}")
    return Path(done.stdout.strip()).resolve().parents[1]
