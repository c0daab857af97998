"""Give the memory of large freed requests back to the OS (glibc `malloc_trim`), at a low rate.

A flood of large requests leaves glibc's heaps holding the freed buffers: RSS stays at its peak
although nothing is in use. Only large requests (at least `min_request_bytes`) count: steady traffic
of ordinary exports never pays for a trim (measured: trimming after small requests cost OTLP/HTTP
ingest 10-15%). After at least `threshold_bytes` of such request bodies have been freed, one
`malloc_trim(0)` runs `delay_seconds` later (so the buffers gRPC frees after answering are gone by
then) in a worker thread, at most once per `delay_seconds`. A no-op where glibc is absent.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _load_malloc_trim()


class MemoryReturner:
    def __init__(
        self,
        threshold_bytes: int = 8 * 1024 * 1024,
        delay_seconds: float = 0.5,
        min_request_bytes: int = 1024 * 1024,
    ) -> None:
        self.threshold_bytes = threshold_bytes
        self.min_request_bytes = min_request_bytes
        self.delay_seconds = delay_seconds
        self.available = _MALLOC_TRIM is not None
        self.trims = 0
        self._freed = 0
        self._scheduled = False

    def freed(self, size: int) -> None:
        """Note a request body of `size` bytes released; schedules a trim once enough was freed."""
        if not self.available or size < self.min_request_bytes:
            return
        self._freed += size
        if self._freed < self.threshold_bytes or self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._scheduled = True
        loop.call_later(self.delay_seconds, lambda: loop.create_task(self._trim()))

    async def _trim(self) -> None:
        self._freed = 0
        try:
            if _MALLOC_TRIM is not None:  # always so here: `freed` schedules nothing without it
                await asyncio.get_running_loop().run_in_executor(None, _MALLOC_TRIM, 0)
                self.trims += 1
        except Exception:  # never let housekeeping hurt the receiver
            log.debug("malloc_trim failed", exc_info=True)
        finally:
            self._scheduled = False
