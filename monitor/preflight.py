"""Everything `run` builds from the config short of binding ports, with every failure a located ConfigError.

`agent-monitor check-config` and `agent-monitor run` both call `preflight`, so a config that one accepts
the other accepts, and both report a bad one the same way (`file:line: section.field: message`).
The daemon takes what preflight built (evaluator instances, checked TLS material) instead of building
them again.

The result store is checked in two ways. A path no store can ever be at (a directory, a path under a file) or a
database from a newer release is a config error. A store that cannot be used now (an unwritable directory or
file, a file that is not a SQLite database) is a warning (`Prepared.store_warnings`): the daemon starts all the
same, with the review unavailable until the store can be opened (it retries), since evaluation and metrics do
not need it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.judges import PairwiseJudge
from monitor.config import ConfigError, Loc, Locator, MonitorConfig, TlsConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.evaluator_setup import build_evaluators, build_pairwise_judges
from monitor.sources.base import SpanFeed, TraceSource
from monitor.sources.factory import make_source
from monitor.store.migrate import refuse_newer, stored_schema
from monitor.store.schema import StoreSchemaError
from monitor.tls import ServerTls, TlsLoadError, load_server_tls

__all__ = ["ConfigError", "Prepared", "check_store_path", "check_tls", "preflight", "store_warnings"]

Problems = list[tuple[Loc, str]]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the daemon needs from the config that can fail to build: evaluators, pairwise judges, TLS material."""

    evaluators: list[ConfiguredEvaluator]
    receivers_tls: ServerTls | None
    api_tls: ServerTls | None
    store_warnings: tuple[str, ...] = ()  # why the store cannot be used now (the daemon starts without it)
    sources: tuple[TraceSource | SpanFeed, ...] = ()  # the enabled `sources:`, in config order
    pairwise_judges: dict[str, PairwiseJudge] = field(default_factory=dict)  # by `variants.pairwise` evaluator


def preflight(config: MonitorConfig, locator: Locator | None = None) -> Prepared:
    """Build and check everything `config` asks for; ConfigError listing every problem at its line."""
    problems: Problems = []
    evaluators, evaluator_problems = build_evaluators(config.evaluator_entries(), config.pricing.overrides())
    problems += evaluator_problems
    pairwise_judges, pairwise_problems = build_pairwise_judges(config.variants.pairwise)
    problems += pairwise_problems
    receivers_tls = check_tls(config.receivers.tls, ("receivers", "tls"), problems)
    api_tls = check_tls(config.api.tls, ("api", "tls"), problems)
    warnings: tuple[str, ...] = ()
    if config.store.enabled and config.store.url is None:  # PostgreSQL: checked when the daemon connects
        problems += [(("store", "path"), problem) for problem in check_store_path(config.store.path)]
        warnings = tuple(store_warnings(config.store.path))
    sources = build_sources(config, problems)
    if problems:
        raise (locator or Locator()).error(problems)
    return Prepared(evaluators, receivers_tls, api_tls, warnings, sources, pairwise_judges)


def build_sources(config: MonitorConfig, problems: Problems) -> tuple[TraceSource | SpanFeed, ...]:
    """The enabled sources, set up (their token found, TLS files read); a problem at the entry otherwise."""
    built: list[TraceSource | SpanFeed] = []
    for index, entry in enumerate(config.sources):
        if not entry.enabled:
            continue
        try:
            built.append(make_source(entry))
        except ValueError as exc:
            problems.append((("sources", index), str(exc)))
    return tuple(built)


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
    """Why no result store can be at `path`: config errors (nothing is created here)."""
    if path == ":memory:":
        return []
    target = Path(path)
    if target.is_dir():
        return [f"{path} is a directory"]
    if target.exists():
        return _newer_schema(target)
    ancestor = _existing_ancestor(target)
    if not ancestor.is_dir():
        return [f"cannot create {path}: {ancestor} is not a directory"]
    return []


def store_warnings(path: str) -> list[str]:
    """Why the result store at `path` cannot be used now; the daemon starts without it (see the module doc)."""
    if path == ":memory:" or check_store_path(path):
        return []
    target = Path(path)
    if not target.exists():
        ancestor = _existing_ancestor(target)
        if not os.access(ancestor, os.W_OK | os.X_OK):
            return [f"cannot create {path}: no write permission in {ancestor}"]
        return []
    if not os.access(target, os.R_OK | os.W_OK) or not os.access(target.parent, os.W_OK | os.X_OK):
        return [f"{target} is not writable (the file and its directory must be)"]
    try:
        _read_only(target, lambda db: db.execute("PRAGMA schema_version").fetchone())
    except sqlite3.Error as exc:
        return [f"{target} cannot be opened as a SQLite database: {exc}"]
    return []


def _existing_ancestor(target: Path) -> Path:
    ancestor = target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    return ancestor


def _newer_schema(target: Path) -> list[str]:
    try:
        _read_only(target, lambda db: refuse_newer(stored_schema(db), target))
    except sqlite3.Error:
        return []  # not a database: a warning (store_warnings)
    except StoreSchemaError as exc:
        return [str(exc)]
    return []


def _read_only(target: Path, read: Callable[[sqlite3.Connection], object]) -> None:
    connection = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
    try:
        read(connection)
    finally:
        connection.close()
