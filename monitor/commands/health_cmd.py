"""`agent-monitor health`: exit 0 when the daemon of this config answers /healthz (the container's HEALTHCHECK).

It reads the same config as `run` (`--config`, else AGENT_MONITOR_CONFIG, else the embedded default, with the
AGENT_MONITOR_* overrides), so the probe follows the metrics port and TLS wherever they are configured. The
probe goes to 127.0.0.1 (or the configured host when it is a specific address); with `api.tls` it speaks
HTTPS without verifying the certificate: it checks liveness on this machine, not the certificate chain.
"""

from __future__ import annotations

import argparse
import ssl
import sys
import urllib.error
import urllib.request
from typing import TextIO

from monitor.config import DEFAULT_SOURCE, ConfigError, load_located
from monitor.config.address import local_url

from .daemon_address import CONFIG_ENV, config_path

__all__ = ["CONFIG_ENV", "add_parser", "config_path", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "health",
        help="exit 0 when the daemon answers /healthz (for container health checks)",
        description="Probe the running daemon's /healthz on its configured metrics port (HTTPS with api.tls). "
        f"Exit 0 when it answers 200, 1 otherwise, 2 on a bad config. The config: --config, else ${CONFIG_ENV}, "
        "else the embedded default.",
    )
    parser.add_argument("--config", help=f"YAML config file (default: ${CONFIG_ENV}, else the embedded default)")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for the answer (default 2)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    err = err or sys.stderr
    path = config_path(args)
    try:
        config, _ = load_located(path, env=None)
    except ConfigError as exc:
        print(f"agent-monitor health: {path or DEFAULT_SOURCE}: invalid config:\n{exc}", file=err)
        return 2
    tls = config.api.tls.enabled
    url = f"{local_url(config)}/healthz"
    context = ssl._create_unverified_context() if tls else None
    try:
        with urllib.request.urlopen(url, timeout=args.timeout, context=context) as answer:
            status = answer.status
    except (urllib.error.URLError, OSError) as exc:
        print(f"agent-monitor health: {url}: {getattr(exc, 'reason', exc)}", file=err)
        return 1
    if status != 200:
        print(f"agent-monitor health: {url}: HTTP {status}", file=err)
        return 1
    return 0
