"""Evaluation events that come after their trace was evaluated: an application that evaluates its answer once
it is sent (an evaluation SDK's judge takes seconds) emits `gen_ai.evaluation.result` records past the trace's
quiet period. The ingestor hands the records of an evaluated trace here instead of the assembler (which would
drop them); their results are counted at once and added to that trace's stored results, as an LLM judge's are
(`LateResults`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from evaluators.traces.records import LogRecord
from monitor.config import MonitorConfig
from monitor.engine.external_results import ExternalResults
from monitor.engine.signing import Signer
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import LateResults

log = logging.getLogger(__name__)

ApplyTally = Callable[[MetricsTally], None]
StoreWrite = Callable[[Sequence[LateResults]], None]


class LateEvaluations:
    def __init__(self, external: ExternalResults, apply: ApplyTally, write: StoreWrite | None = None) -> None:
        self.external = external
        self._apply = apply
        self._write = write

    def take(self, records: Sequence[LogRecord]) -> None:
        """The evaluation records of traces evaluated already: counted, and added to their traces in the store."""
        found = self.external.late_rows(records)
        if not found:
            return
        tally = MetricsTally()
        late = []
        for (trace_id, service), rows in found.items():
            tally.add_results(service, trace_id, rows)
            late.append(LateResults(trace_id, service, tuple(rows)))
        try:
            self._apply(tally)
        except Exception:
            log.exception("could not count %d late external results", sum(len(r.results) for r in late))
        if self._write is not None:
            self._write(late)


def late_evaluations_of(
    config: MonitorConfig, evaluators: Sequence[Any], apply: ApplyTally, store: Any | None
) -> Callable[[Sequence[LogRecord]], None] | None:
    """The daemon's `LateEvaluations.take` (None with `external_evaluations` off): `evaluators` its configured ones
    (their labels are the daemon's own names), `store` its result store (None: none)."""
    settings = config.external_evaluations
    if not settings.enabled:
        return None
    external = ExternalResults(settings, [c.label for c in evaluators], Signer(config.signatures.compiled_rules()))
    return LateEvaluations(external, apply, store.write if store is not None else None).take


__all__ = ["LateEvaluations", "late_evaluations_of"]
