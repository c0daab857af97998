"""`assembly:` and `evaluation:` — how spans become traces, and how traces are evaluated (queue, timeout, workers)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

from pydantic import NonNegativeInt, PositiveInt, model_validator

from .locate import Loc, LocatedError
from .units import Duration, MiB, NonNegativeDuration, Section, Size


class AssemblyConfig(Section):
    quiet_period: Duration = 5.0
    max_trace_wait: Duration = 120.0
    max_pending_spans: PositiveInt = 500_000
    max_pending_bytes: Size = 128 * MiB
    max_spans_per_trace: PositiveInt = 10_000
    evaluated_trace_memory: PositiveInt = 100_000
    late_span_window: NonNegativeDuration = 600.0

    @model_validator(mode="after")
    def _ordered(self) -> AssemblyConfig:
        problems: list[tuple[Loc, str]] = []
        if self.quiet_period >= self.max_trace_wait:
            problems.append((("quiet_period",), f"must be less than max_trace_wait ({self.max_trace_wait:g}s)"))
        if self.max_spans_per_trace > self.max_pending_spans:
            problems.append((("max_spans_per_trace",), f"must not exceed max_pending_spans ({self.max_pending_spans})"))
        if problems:
            raise LocatedError(problems)
        return self


class EvaluationConfig(Section):
    queue_size: PositiveInt = 256
    timeout: Duration = 30.0
    mode: Literal["monitor", "experiment"] = "monitor"
    workers: Literal["auto"] | NonNegativeInt = "auto"

    def worker_count(self) -> int:
        """Worker processes to run: `auto` is the CPUs this process may use; 0 or 1 evaluates in-process."""
        return usable_cpus() if self.workers == "auto" else self.workers


def usable_cpus(cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota (a container's CPU limit,
    which the affinity mask does not show: a pod limited to 2 CPUs on a 64-core node sees 64)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cpus
