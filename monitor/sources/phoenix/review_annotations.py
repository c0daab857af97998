"""Reviews of a judge's verdicts back into Arize Phoenix as human annotations (the reviews' side of write-back; the
results' side is result_annotations.py). A review of an LLM judge's result is posted to every Phoenix poll source
with `write_back` on: annotator_kind HUMAN, name the evaluator, label the reviewer's corrected label (else `agree`
or `disagree`), score the corrected score, explanation the note, the reviewer and the verdict reviewed in metadata.
Its identifier `agent-monitor-review:<evaluator>` keeps it beside the judge's own annotation and makes a changed
review update it. A trace that did not come from that Phoenix is refused there (404) and left out (logged), as
results are: that is how "the trace came from there" is decided without recording each trace's source."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from monitor.sources.phoenix.annotations import Annotation, PhoenixAnnotations

if TYPE_CHECKING:
    from monitor.store.reviews import StoredReview

log = logging.getLogger(__name__)

REVIEW_IDENTIFIER_PREFIX = "agent-monitor-review:"


def review_annotation(review: StoredReview) -> Annotation:
    """The human annotation of one review in force."""
    verdict = {True: "pass", False: "fail", None: "skip"}[review.verdict_passed]
    return Annotation(
        trace_id=review.trace_id,
        span_id=review.span_id or None if review.level != "trace" else None,
        name=review.evaluator,
        annotator_kind="HUMAN",
        label=review.corrected_label or review.agreement,
        score=review.corrected_score,
        explanation=review.note,
        identifier=f"{REVIEW_IDENTIFIER_PREFIX}{review.evaluator}",
        metadata={"reviewer": review.reviewer, "agreement": review.agreement, "verdict": verdict},
    )


async def annotate_review(review: StoredReview, targets: Sequence[PhoenixAnnotations], judges: Collection[str]) -> int:
    """Post `review` to every Phoenix of `targets` when it reviews a judge (`judges`: their metric labels); how
    many annotations Phoenix accepted (0 for another evaluator, or a trace no target holds)."""
    if review.evaluator not in judges or not targets:
        return 0
    annotation = review_annotation(review)
    return sum([await target.post([annotation]) for target in targets])


class ReviewAnnotator:
    """`on_reviewed(review)` (the hook of monitor.web.review_writer.ReviewWriter, on the event loop): posts the review
    in the background; a failure is logged, never raised to the reviewer."""

    def __init__(self, targets: Sequence[PhoenixAnnotations], judges: Collection[str]) -> None:
        self.targets = list(targets)
        self.judges = set(judges)
        self._tasks: set[asyncio.Task[int]] = set()

    def on_reviewed(self, review: StoredReview) -> None:
        if review.evaluator not in self.judges or not self.targets:
            return
        task = asyncio.get_running_loop().create_task(self._post(review))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, review: StoredReview) -> int:
        try:
            return await annotate_review(review, self.targets, self.judges)
        except Exception as exc:
            log.warning("review of %s on trace %s not written back to Phoenix: %s", review.evaluator,
                        review.trace_id, exc)  # fmt: skip
            return 0

    async def close(self) -> None:
        """Wait for the posts under way, then close the targets' connections."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for target in self.targets:
            await target.close()


def review_annotator(sources: Sequence[object], judges: Collection[str]) -> ReviewAnnotator:
    """The annotator of the enabled Phoenix poll sources with `write_back` on (none: it posts nothing)."""
    from monitor.config.sources import PhoenixSourceConfig

    targets = [
        PhoenixAnnotations(s) for s in sources if isinstance(s, PhoenixSourceConfig) and s.enabled and s.write_back
    ]
    return ReviewAnnotator(targets, judges)
