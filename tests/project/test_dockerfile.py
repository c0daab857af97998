"""The Dockerfile: hadolint-clean, and what the deploy files rely on (config path, data volume, user, ports)."""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import shlex
from pathlib import Path, PurePosixPath

import pytest

from monitor.config.loader import load_config
from tests.deploy.support import ROOT, monitor_config, run, tool

DOCKERFILE = ROOT / "Dockerfile"
CONFIG_PATH = "/etc/agent-monitor/monitor.yaml"
DATA_DIR = "/var/lib/agent-monitor/data"
UID = "10001"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        keyword, _, args = line.partition(" ")
        result.append((keyword.upper(), args.strip()))
    return result


def final_stage() -> list[tuple[str, str]]:
    steps = instructions(DOCKERFILE.read_text(encoding="utf-8"))
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def words(args: str) -> list[str]:
    """Arguments in exec (JSON) or shell form."""
    return json.loads(args) if args.startswith("[") else shlex.split(args)


def env_vars(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, args in stage:
        if keyword == "ENV":
            for item in shlex.split(args):
                name, _, value = item.partition("=")
                env[name] = value
    return env


@pytest.mark.integration
def test_hadolint_finds_nothing() -> None:
    result = run(tool("hadolint"), DOCKERFILE, cwd=ROOT)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


@pytest.mark.integration
def test_hadolint_is_really_linting(tmp_path: Path) -> None:
    """The check above would pass on a no-op: a Dockerfile with known findings must fail."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\n")
    result = run(tool("hadolint"), bad)
    assert result.returncode != 0
    assert "DL3007" in result.stdout  # `latest` tag
    assert "DL3008" in result.stdout  # unpinned apt package


def test_default_config_is_in_the_image_and_named_by_the_environment() -> None:
    stage = final_stage()
    assert env_vars(stage).get("AGENT_MONITOR_CONFIG") == CONFIG_PATH
    copies = [words(args) for keyword, args in stage if keyword == "COPY" and not args.startswith("--from")]
    sources = [c[:-1] for c in copies if c[-1] == CONFIG_PATH]
    assert sources == [["monitor/default_config.yaml"]], copies
    # The file copied there is a valid config, and what `run` uses when nothing is mounted.
    assert load_config(ROOT / "monitor" / "default_config.yaml", env={}) == load_config(None, env={})


def test_data_directory_is_a_volume_owned_by_the_non_root_user() -> None:
    stage = final_stage()
    keywords = [k for k, _ in stage]
    volumes = [v for k, args in stage if k == "VOLUME" for v in words(args)]
    assert DATA_DIR in volumes
    # Ownership set before VOLUME (changes to a volume path after its declaration are discarded).
    volume_at = keywords.index("VOLUME")
    runs = " ".join(args for k, args in stage[:volume_at] if k == "RUN")
    assert re.search(rf"mkdir -p [^&]*{re.escape(DATA_DIR)}", runs)
    assert re.search(rf"chown (-R )?{UID}(:{UID})? [^&]*{re.escape(DATA_DIR)}", runs)
    assert re.search(rf"useradd [^&]*--uid {UID}", runs)
    assert re.search(rf"groupadd [^&]*--gid {UID}", runs)

    users = [args for k, args in stage if k == "USER"]
    assert users and users[-1].split(":")[0] == UID  # numeric, so runAsNonRoot can verify it


def test_default_store_path_lands_in_the_volume() -> None:
    """The embedded default's relative store path resolves, from WORKDIR, inside the data volume."""
    workdirs = [args for k, args in final_stage() if k == "WORKDIR"]
    store = load_config(None, env={}).store.path
    resolved = posixpath.normpath(posixpath.join(workdirs[-1], str(store)))
    assert PurePosixPath(resolved).is_relative_to(DATA_DIR), resolved
    # ...and so does the deploy config's absolute one.
    assert PurePosixPath(str(monitor_config().store.path)).is_relative_to(DATA_DIR)


def test_exposed_ports_health_check_and_entrypoint() -> None:
    stage = final_stage()
    config = load_config(None, env={})
    exposed = {int(p.split("/")[0]) for k, args in stage if k == "EXPOSE" for p in args.split()}
    assert exposed == {config.receivers.grpc.port, config.receivers.http.port, config.metrics.port}
    healthcheck = next(args for k, args in stage if k == "HEALTHCHECK")
    assert words(healthcheck.split(" CMD ", 1)[1]) == ["agent-monitor", "health"]
    assert words(next(args for k, args in stage if k == "ENTRYPOINT")) == ["agent-monitor"]
    assert words(next(args for k, args in stage if k == "CMD")) == ["run"]


GLOB = {"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


def dockerignore_excludes(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore drops `path`: a pattern matches the path or one of its parent directories, from the
    context root (`*` and `?` within one path element, `**` across any number of them); `!` re-includes."""
    parents = ["/".join(path.split("/")[: i + 1]) for i in range(path.count("/") + 1)]
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.removeprefix("!").strip("/")
        regex = "".join(GLOB.get(token, re.escape(token)) for token in re.findall(r"\*\*/|\*\*|\*|\?|[^*?]+", body))
        if any(re.fullmatch(regex, candidate) for candidate in parents):
            excluded = not negate
    return excluded


def test_dockerignore_keeps_what_the_dockerfile_copies_and_drops_the_rest() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        src
        for keyword, args in instructions(DOCKERFILE.read_text(encoding="utf-8"))
        if keyword == "COPY" and not args.startswith("--from")
        for src in words(args)[:-1]
    ]
    assert copied, "no COPY from the build context?"
    for src in copied:
        assert (ROOT / src).exists(), src
        assert not dockerignore_excludes(src.rstrip("/"), patterns), f".dockerignore drops {src}, which COPY needs"
    for heavy in (".git", ".venv", "tests", "deploy", "data/results.db", "monitor/__pycache__"):
        assert dockerignore_excludes(heavy, patterns), f"{heavy} should stay out of the build context"


def test_run_and_health_read_the_variable_the_image_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --config, `run` and `health` read the file named by the variable that the Dockerfile sets."""
    from monitor.commands.health_cmd import CONFIG_ENV, config_path

    assert CONFIG_ENV in env_vars(final_stage())
    monkeypatch.setenv(CONFIG_ENV, CONFIG_PATH)
    assert config_path(argparse.Namespace(config=None)) == CONFIG_PATH
