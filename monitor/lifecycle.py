"""One lifecycle for every long-lived part of the daemon (the OpenTelemetry Collector's `component.Component`).

A `Component` has `start()`, then `shutdown(grace)`: `grace` is the seconds it may take to stop (letting work in
flight finish); shutdown is safe before `start()` and safe twice, and a `start()` that raises undoes what it did.
`Lifecycle` starts its components in dependency order and shuts them down in reverse, within one deadline: each
one gets what is left of the shutdown grace period, shaped by its `Grace` (at least, at most, or a share of the
whole). Parts whose own API differs (the SDK's judge engine, the review reader) are adapted by `Closing`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@runtime_checkable
class Component(Protocol):
    """Started once, shut down once (further shutdowns, and one before `start()`, do nothing harmful)."""

    async def start(self) -> None: ...

    async def shutdown(self, grace: float) -> None: ...


@dataclass(frozen=True)
class Grace:
    """A component's share of the shutdown grace period: what is left of it (or `share` of the whole period), at
    least `floor` and at most `cap` seconds."""

    floor: float = 0.0
    cap: float = math.inf
    share: float | None = None  # of the whole grace period; None: what is left of it when this component stops

    @classmethod
    def fixed(cls, seconds: float) -> Grace:
        return cls(floor=seconds, cap=seconds)

    def of(self, whole: float, left: float) -> float:
        base = whole * self.share if self.share is not None else left
        return min(max(base, self.floor), self.cap)


@dataclass(frozen=True)
class Part:
    """One component in a `Lifecycle`, with its name (for logs and tests) and its share of the grace period."""

    name: str
    component: Component
    grace: Grace = field(default_factory=Grace)


class Lifecycle:
    """Starts its parts in order and shuts them down in reverse within one deadline. A failed start shuts every
    part down (in reverse: those that started stop, the others only release what their constructor holds) and
    re-raises. Shutdown is idempotent."""

    def __init__(self, parts: Sequence[Part]) -> None:
        names = [part.name for part in parts]
        if len(set(names)) != len(names):
            raise ValueError(f"component names must be unique: {names}")
        self.parts = list(parts)
        self._stopped = False

    @property
    def components(self) -> dict[str, Component]:
        return {part.name: part.component for part in self.parts}

    async def start(self, undo_grace: float = 0.0) -> None:
        """Start every part in order; when one raises, `shutdown(undo_grace)` and re-raise."""
        try:
            for part in self.parts:
                await part.component.start()
        except BaseException:
            await self.shutdown(undo_grace)
            raise

    async def shutdown(self, grace: float) -> None:
        """Shut every part down in reverse order, each within its share of `grace` seconds from now."""
        if self._stopped:
            return
        self._stopped = True
        deadline = time.monotonic() + grace
        for part in reversed(self.parts):
            await part.component.shutdown(part.grace.of(grace, deadline - time.monotonic()))


class Together:
    """Components started in order and shut down concurrently, sharing one grace (e.g. the two judge stages)."""

    def __init__(self, *components: Component) -> None:
        self.members = components

    async def start(self) -> None:
        for component in self.members:
            await component.start()

    async def shutdown(self, grace: float) -> None:
        await asyncio.gather(*(component.shutdown(grace) for component in self.members))


class Closing:
    """A part that has nothing to start and is released by one `close` (sync or async), called once."""

    def __init__(self, close: Callable[[], Awaitable[None] | None]) -> None:
        self._close: Callable[[], Awaitable[None] | None] | None = close

    async def start(self) -> None:
        """Nothing to start: the part is ready once built."""

    async def shutdown(self, grace: float) -> None:
        close, self._close = self._close, None
        if close is not None:
            result = close()
            if result is not None:
                await result


class Hook:
    """A step of the shutdown that is no component of its own (e.g. "stop accepting"), run once."""

    def __init__(self, on_shutdown: Callable[[], None]) -> None:
        self._on_shutdown: Callable[[], None] | None = on_shutdown

    async def start(self) -> None:
        """Nothing to start."""

    async def shutdown(self, grace: float) -> None:
        step, self._on_shutdown = self._on_shutdown, None
        if step is not None:
            step()


async def cancel_task(task: asyncio.Task[None] | None) -> None:
    """Cancel a component's background task (None: it never started) and wait until it has stopped."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
