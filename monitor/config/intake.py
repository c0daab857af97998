"""`intake:` — the intake log: what the receivers accept, kept on local disk until it is evaluated and stored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from .units import MiB, NonNegativeDuration, Section, Size

WAL_DIRECTORY = "intake"  # next to the SQLite store's file when `intake.wal.path` is empty


class WalConfig(Section):
    """`enabled`: append every accepted export request to the log before answering it. `path`: its directory
    (empty: `intake/` next to `store.path`). `sync`: `batch` (written to the OS before the answer, fsynced in the
    background every `sync_interval`: survives a kill of the process; a power loss can lose the last interval),
    `always` (an fsync before each answer; writes queued at once still share it) or `none` (written to the OS
    before the answer, never fsynced). `segment_bytes`: the size of one file; `max_bytes`: the log's bound, past
    it requests are answered throttled (retry later), never dropped."""

    enabled: bool = True  # acknowledged means kept (docs/durability.md; its cost: "Cost" there)
    path: str = ""
    sync: Literal["batch", "always", "none"] = "batch"
    sync_interval: Annotated[NonNegativeDuration, Field(le=1.0)] = 0.1
    segment_bytes: Annotated[Size, Field(ge=64 * 1024)] = 16 * MiB
    max_bytes: Annotated[Size, Field(ge=1 * MiB)] = 1024 * MiB

    def directory(self, store_path: str) -> Path:
        """Where the segments live: `path`, else `intake/` in the SQLite store's directory."""
        return Path(self.path) if self.path else Path(store_path).parent / WAL_DIRECTORY


class IntakeConfig(Section):
    wal: WalConfig = Field(default_factory=WalConfig)
