"""Leadership: whether this replica polls a source now, when replicas share a PostgreSQL store (`Leases`).

Asked before each run (`lead`) and confirmed before each page and each checkpoint save (`confirm`: a holder that was
stuck past its lease finds another replica polling and stops without saving). A change is logged and gauged
(`agent_monitor_poll_leader{source}`); only the polling replica reports the source's lag. Without leases (SQLite, no
store) this replica always polls.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from monitor.metrics.poll import PollMetrics
from monitor.sources.base import Leases

log = logging.getLogger("monitor.sources.runner")


class LeaseError(Exception):
    """Whether this replica holds the source cannot be known (kind "lease")."""


class LeaseLost(Exception):
    """Another replica polls the source now: the run stops without saving."""


class Leadership:
    """This replica's hold on one source. `on_gained`: called when it takes the source over."""

    def __init__(
        self, name: str, leases: Leases | None, metrics: PollMetrics | None, on_gained: Callable[[], None]
    ) -> None:
        self.name = name
        self.leases = leases
        self.metrics = metrics
        self.on_gained = on_gained
        self.leader: bool | None = None  # this replica polls the source (None: not known yet)

    async def lead(self) -> bool:
        """Whether this replica polls the source now (always without leases); a change is logged and gauged, and
        a replica that takes the source reads its checkpoint again (another replica moved it)."""
        if self.leases is None:
            held = True
        else:
            try:
                held = await self.leases.hold(self.name)
            except Exception as exc:
                self._leading(False)
                raise LeaseError(f"whether this replica polls {self.name} cannot be known: {exc}") from exc
        self._leading(held)
        return held

    async def confirm(self) -> None:
        """LeaseLost when another replica polls the source now (a holder that was stuck past its lease)."""
        if self.leases is not None and not await self.lead():
            raise LeaseLost(self.name)

    def _leading(self, held: bool) -> None:
        if held != self.leader and self.leases is not None:
            if held:
                self.on_gained()
                log.info("this replica polls %s now (from its checkpoint)", self.name)
            elif self.leader:
                log.warning("this replica no longer polls %s (another one took it over, or the lease failed)",
                            self.name)  # fmt: skip
            else:
                log.info("another replica polls %s; this one takes over when it stops", self.name)
        self.leader = held
        if self.metrics is not None:
            self.metrics.leader.labels(source=self.name).set(1 if held else 0)
            if not held:  # only the poller reports the source's lag
                with contextlib.suppress(KeyError):
                    self.metrics.lag.remove(self.name)
