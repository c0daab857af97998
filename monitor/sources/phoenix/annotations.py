"""Results back into Arize Phoenix as annotations (verified on Phoenix 20.26.1: /openapi.json and
phoenix/server/api/routers/v1/spans.py `annotate_spans`, traces.py `annotate_traces`, annotations.py).

`POST /v1/span_annotations?sync=true` and `POST /v1/trace_annotations?sync=true`, body
`{"data": [{"span_id" | "trace_id", "name", "annotator_kind", "result": {"label", "score", "explanation"},
"identifier"}]}`. With `sync=true` Phoenix writes at once and answers one `{"id"}` per annotation (without it,
it queues them and answers `{"data": []}`). Each row is an upsert on (name, span or trace, identifier): the
identifier `agent-monitor:<name>` makes a second result of the same evaluator for the same span or trace update
the first instead of adding one. Ids are hex, as Phoenix stores them; an unknown id fails the whole request with
404 ("Spans with IDs ... do not exist"), so a rejected batch is sent again one annotation at a time and the
unknown ones are left out (logged).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Literal

from monitor.config.sources import PhoenixSourceConfig
from monitor.sources.base import SourceError
from monitor.sources.http import SourceHttp

log = logging.getLogger(__name__)

BATCH_SIZE = 100
IDENTIFIER_PREFIX = "agent-monitor:"


@dataclass(slots=True)
class Annotation:
    """One evaluator's result on a span (span_id set) or on a whole trace (span_id None)."""

    trace_id: str
    span_id: str | None
    name: str
    annotator_kind: Literal["CODE", "LLM", "HUMAN"]
    label: str | None
    score: float | None
    explanation: str | None
    identifier: str | None = None  # Phoenix's upsert key with name and target; None: `agent-monitor:<name>`
    metadata: dict[str, Any] | None = None


class PhoenixAnnotations:
    """Posts annotations to the Phoenix a PhoenixSourceConfig names."""

    def __init__(self, config: PhoenixSourceConfig, *, http: SourceHttp | None = None) -> None:
        self.config = config
        self.http = http or SourceHttp(config)

    async def post(self, annotations: list[Annotation]) -> int:
        """How many annotations Phoenix accepted; SourceError when it cannot be reached or refuses the token."""
        spans = [_row(a, "span_id", a.span_id) for a in annotations if a.span_id]
        traces = [_row(a, "trace_id", a.trace_id) for a in annotations if not a.span_id]
        accepted = 0
        for path, rows in (("/v1/span_annotations", spans), ("/v1/trace_annotations", traces)):
            for first in range(0, len(rows), BATCH_SIZE):
                accepted += await self._send(path, rows[first : first + BATCH_SIZE])
        return accepted

    async def _send(self, path: str, rows: list[dict[str, Any]]) -> int:
        try:
            return _count(await self.http.post_json(path, {"data": rows}, [("sync", "true")]), len(rows))
        except SourceError as exc:
            if exc.kind != "client":
                raise
            if len(rows) == 1:
                log.warning("Phoenix refused an annotation: %s", exc)
                return 0
        return sum([await self._send(path, [row]) for row in rows])

    async def close(self) -> None:
        await self.http.close()


def _row(annotation: Annotation, key: str, target: str | None) -> dict[str, Any]:
    score = annotation.score
    return {
        key: (target or "").lower(),
        "name": annotation.name,
        "annotator_kind": annotation.annotator_kind,
        "result": {
            "label": annotation.label,
            "score": score if score is not None and math.isfinite(score) else None,  # NaN is not JSON
            "explanation": annotation.explanation,
        },
        "identifier": annotation.identifier or f"{IDENTIFIER_PREFIX}{annotation.name}",
        **({"metadata": annotation.metadata} if annotation.metadata else {}),
    }


def _count(document: Any, sent: int) -> int:
    data = document.get("data") if isinstance(document, dict) else None
    return len(data) if isinstance(data, list) else sent
