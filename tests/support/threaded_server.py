"""An aiohttp application served on 127.0.0.1 from a background thread, and a small urllib client for it."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

START_TIMEOUT = 10.0


@contextmanager
def serve(app: web.Application) -> Iterator[str]:
    """Serve `app` on a free port of 127.0.0.1; yields its base URL, stops it on exit (bounded waits)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="review-test-server", daemon=True)
    thread.start()
    runner = web.AppRunner(app, access_log=None)

    async def start() -> int:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return int(runner.addresses[0][1])

    try:
        port = asyncio.run_coroutine_threadsafe(start(), loop).result(START_TIMEOUT)
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(START_TIMEOUT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT)
        loop.close()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """(status, headers, body as JSON, or text when it is not JSON) of GET `url`."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, head, raw = answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        status, head, raw = exc.code, dict(exc.headers), exc.read()
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace")
    return status, head, body
