"""An aiohttp application served on 127.0.0.1 from the test's own event loop (the fake trace stores)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` on a free port of 127.0.0.1 until the block ends; yields its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def answering(handler: Any) -> web.Application:
    """An application that answers every method and path with `handler`."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return app
