"""Logging setup (text or JSON lines) and a rate limiter for per-span problems."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and exception text when any."""

    def format(self, record: logging.LogRecord) -> str:
        data = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False)


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        formatter: logging.Formatter = JsonFormatter()
        formatter.converter = time.gmtime
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # google_genai logs every request (and whole error bodies on retries) at INFO: a line per judge call.
    for noisy in ("apscheduler", "grpc", "httpx", "httpcore", "httpx2", "google_genai"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


class RateLimitedLogger:
    """At most `per_minute` messages per key; the number suppressed is reported with the next one."""

    def __init__(self, logger: logging.Logger, per_minute: int = 10, clock: Callable[[], float] = time.monotonic):
        self.logger = logger
        self.per_minute = max(per_minute, 1)
        self.clock = clock
        self._windows: dict[str, tuple[float, int, int]] = {}  # key -> (window start, sent, suppressed)

    def warning(self, key: str, message: str, *args: object) -> bool:
        now = self.clock()
        start, sent, suppressed = self._windows.get(key, (now, 0, 0))
        if now - start >= 60.0:
            start, sent = now, 0
        if sent >= self.per_minute:
            self._windows[key] = (start, sent, suppressed + 1)
            return False
        if suppressed:
            message += f" ({suppressed} similar messages suppressed)"
        self.logger.warning(message, *args)
        self._windows[key] = (start, sent + 1, 0)
        return True
