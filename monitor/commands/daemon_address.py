"""Where a command finds the daemon, its result store and the API token: the explicit option, else the config the
daemon reads, found as `run` finds it (--config, else $AGENT_MONITOR_CONFIG, else the embedded default, with the
AGENT_MONITOR_* overrides).

From the config: the daemon at its metrics port on this host (`config/address.py` `local_url`: 127.0.0.1 for a
wildcard host, https with api.tls), the store at `store.url`, else `store.path` (relative to the working directory,
as the daemon opens it), the token of `api.auth`, else `receivers.auth` (its bearer_token or bearer_token_file).
An invalid config is `InvalidConfig`, reported as `check-config` reports it (exit 2).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from monitor.config import ConfigError, MonitorConfig

CONFIG_ENV = "AGENT_MONITOR_CONFIG"
TOKEN_ENV = "AGENT_MONITOR_API_TOKEN"
CONFIG_HELP = f"YAML config file (default: ${CONFIG_ENV}, else the embedded default)"


class InvalidConfig(Exception):
    """The config could not be loaded: `path` (None: the embedded default) and the ConfigError."""

    def __init__(self, path: str | None, error: ConfigError) -> None:
        super().__init__(str(error))
        self.path = path
        self.error = error

    def report(self, err: TextIO) -> int:
        """Print it as `check-config` and `run` do; returns 2."""
        from monitor.commands.check_config import report_invalid
        from monitor.config import DEFAULT_SOURCE

        return report_invalid(self.path or DEFAULT_SOURCE, self.error, err)


@dataclass(frozen=True, slots=True)
class DaemonAddress:
    """The daemon's base URL and the bearer token to send it (None: none)."""

    url: str
    token: str | None


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help=CONFIG_HELP)


def config_path(args: argparse.Namespace) -> str | None:
    """The config file `run` uses: --config, else $AGENT_MONITOR_CONFIG, else None (the embedded default)."""
    return getattr(args, "config", None) or os.environ.get(CONFIG_ENV) or None


def load(args: argparse.Namespace) -> MonitorConfig:
    """The config `run` would read; InvalidConfig when it is not valid."""
    from monitor.config import ConfigError, load_located

    path = config_path(args)
    try:
        return load_located(path, env=None)[0]
    except ConfigError as exc:
        raise InvalidConfig(path, exc) from None


def daemon_address(args: argparse.Namespace) -> DaemonAddress:
    """`--url`, else the config's metrics port; the token: `--token`, else $AGENT_MONITOR_API_TOKEN, else the
    config's API token. With `--url` and a token given, or `--url` and no config named, the config is not read."""
    from monitor.config.address import local_url

    url = getattr(args, "url", None)
    token = getattr(args, "token", None)
    if token is None:
        token = os.environ.get(TOKEN_ENV)
    if url is not None and (token is not None or config_path(args) is None):
        return DaemonAddress(url, token or None)
    config = load(args)
    return DaemonAddress(url or local_url(config), (token if token is not None else config.api_token()) or None)


def store_location(args: argparse.Namespace, config: MonitorConfig | None = None) -> str:
    """`--store`, else the config's store (`config`, else the one `run` reads): its `url`, else its `path`."""
    store = getattr(args, "store", None)
    if store is not None:
        return str(store)
    config = config if config is not None else load(args)
    return config.store.url or config.store.path
