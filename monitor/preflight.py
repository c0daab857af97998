"""Everything `run` builds from the config short of binding ports, with every failure a located ConfigError.

`agent-monitor check-config` and `agent-monitor run` both call `preflight`, so a config that one accepts
the other accepts, and both report a bad one the same way (`file:line: section.field: message`).
The daemon takes what preflight built (evaluator instances, checked TLS material) instead of building
them again.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from monitor.config import ConfigError, Loc, Locator, MonitorConfig, TlsConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.evaluator_setup import build_evaluators
from monitor.tls import ServerTls, TlsLoadError, load_server_tls

__all__ = ["ConfigError", "Prepared", "check_store_path", "check_tls", "preflight"]

Problems = list[tuple[Loc, str]]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the daemon needs from the config that can fail to build: evaluators and TLS material."""

    evaluators: list[ConfiguredEvaluator]
    receivers_tls: ServerTls | None
    api_tls: ServerTls | None


def preflight(config: MonitorConfig, locator: Locator | None = None) -> Prepared:
    """Build and check everything `config` asks for; ConfigError listing every problem at its line."""
    problems: Problems = []
    evaluators, evaluator_problems = build_evaluators(config.evaluator_entries())
    problems += evaluator_problems
    receivers_tls = check_tls(config.receivers.tls, ("receivers", "tls"), problems)
    api_tls = check_tls(config.api.tls, ("api", "tls"), problems)
    if config.store.enabled:
        problems += [(("store", "path"), problem) for problem in check_store_path(config.store.path)]
    if problems:
        raise (locator or Locator()).error(problems)
    return Prepared(evaluators, receivers_tls, api_tls)


def check_tls(tls: TlsConfig, where: Loc, problems: Problems) -> ServerTls | None:
    """The checked cert/key pair of a `tls:` section (None when TLS is off); a problem at its file otherwise."""
    if tls.cert_file is None or tls.key_file is None:
        return None
    try:
        return load_server_tls(tls.cert_file, tls.key_file)
    except TlsLoadError as exc:
        key = "key_file" if str(exc).startswith(f"cannot read {tls.key_file}") else "cert_file"
        problems.append(((*where, key), str(exc)))
        return None


def check_store_path(path: str) -> list[str]:
    """Why the result store cannot be opened at `path` (nothing is created here)."""
    if path == ":memory:":
        return []
    target = Path(path)
    if target.is_dir():
        return [f"{path} is a directory"]
    if target.exists():
        return _existing_database(target)
    ancestor = target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return [f"cannot create {path}: {ancestor} is not a directory"]
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return [f"cannot create {path}: no write permission in {ancestor}"]
    return []


def _existing_database(target: Path) -> list[str]:
    if not os.access(target, os.R_OK | os.W_OK) or not os.access(target.parent, os.W_OK | os.X_OK):
        return [f"{target} is not writable (the file and its directory must be)"]
    try:
        connection = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
        try:
            connection.execute("PRAGMA schema_version").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return [f"{target} cannot be opened as a SQLite database: {exc}"]
    return []
