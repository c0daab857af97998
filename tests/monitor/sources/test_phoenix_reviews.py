"""Reviews of a judge's verdicts written back to a real Arize Phoenix as human annotations
(monitor/sources/phoenix/review_annotations.py): on the trace or the span the result names, beside the judge's own
annotation, updated in place when the review changes; other evaluators' reviews and traces Phoenix does not hold
are not written."""

from __future__ import annotations

import asyncio

from monitor.config.sources import PhoenixSourceConfig
from monitor.sources.phoenix.annotations import Annotation, PhoenixAnnotations
from monitor.sources.phoenix.review_annotations import ReviewAnnotator, annotate_review, review_annotator
from monitor.store.reviews import StoredReview
from tests.monitor.sources.test_phoenix import SCENARIOS, _annotations, load, project  # noqa: F401  (the fixture)

JUDGES = {"helpfulness", "goal_met"}


def review(trace_id: str, evaluator: str, level: str, span_id: str, agreement: str, **changes: object) -> StoredReview:
    base = StoredReview("r1", trace_id, evaluator, level, span_id, None, "svc", False, 0.2, None, agreement,  # type: ignore[arg-type]
                        None, None, None, "ann", 100.0, None, None)  # fmt: skip
    return base._replace(**changes)


def test_reviews_of_judges_become_human_annotations_updated_in_place(phoenix: str, project: str) -> None:  # noqa: F811
    (trace_id, spans), *_ = load(phoenix, project, SCENARIOS[:1]).items()
    root, child = spans[0].span_id, spans[1].span_id
    config = PhoenixSourceConfig(type="phoenix", name="px", url=phoenix, project=project)

    async def post(*reviews: StoredReview, machine: list[Annotation] | None = None) -> list[int]:
        target = PhoenixAnnotations(config)
        try:
            if machine:
                await target.post(machine)
            return [await annotate_review(r, [target], JUDGES) for r in reviews]
        finally:
            await target.close()

    judge_result = Annotation(trace_id, child, "helpfulness", "LLM", "fail", 0.2, "unhelpful")
    on_span = review(trace_id, "helpfulness", "llm", child, "disagree", corrected_score=0.9, note="it answered")
    on_trace = review(trace_id, "goal_met", "trace", root, "agree")
    not_a_judge = review(trace_id, "tool_errors", "trace", root, "disagree")
    unknown = review("0" * 31 + "1", "goal_met", "trace", "", "agree")
    assert asyncio.run(post(on_span, on_trace, not_a_judge, unknown, machine=[judge_result])) == [1, 1, 0, 0]

    spans_back = [a for a in _annotations(phoenix, project, "span", [child]) if a["name"] == "helpfulness"]
    by_kind = {a["annotator_kind"]: a for a in spans_back}
    assert set(by_kind) == {"LLM", "HUMAN"}  # the judge's verdict and the reviewer's, side by side
    human = by_kind["HUMAN"]
    assert human["result"] == {"label": "disagree", "score": 0.9, "explanation": "it answered"}
    assert human["identifier"] == "agent-monitor-review:helpfulness"
    assert human["metadata"] == {"reviewer": "ann", "agreement": "disagree", "verdict": "fail"}
    [on_the_trace] = _annotations(phoenix, project, "trace", [trace_id])
    assert (on_the_trace["name"], on_the_trace["annotator_kind"]) == ("goal_met", "HUMAN")
    assert on_the_trace["result"] == {"label": "agree", "score": None, "explanation": None}

    changed = on_span._replace(review_id="r2", agreement="agree", corrected_score=None, corrected_label="partly",
                               note=None, reviewer="bob")  # fmt: skip

    async def through_the_hook() -> None:  # as the daemon's ReviewWriter calls it, on the event loop
        annotator = ReviewAnnotator([PhoenixAnnotations(config)], JUDGES)
        annotator.on_reviewed(changed)
        annotator.on_reviewed(not_a_judge)
        await annotator.close()

    asyncio.run(through_the_hook())
    again = [a for a in _annotations(phoenix, project, "span", [child]) if a["annotator_kind"] == "HUMAN"]
    assert [a["id"] for a in again] == [human["id"]]  # updated, not added
    assert again[0]["result"] == {"label": "partly", "score": None, "explanation": None}
    assert again[0]["metadata"]["reviewer"] == "bob"


def test_the_daemon_posts_reviews_to_the_phoenix_sources_that_write_back() -> None:
    """`review_annotator` (the daemon's hook) targets the enabled Phoenix sources with `write_back` on only."""
    sources = [
        PhoenixSourceConfig(type="phoenix", name="on", url="http://127.0.0.1:9", write_back=True),
        PhoenixSourceConfig(type="phoenix", name="off", url="http://127.0.0.1:9"),
        PhoenixSourceConfig(type="phoenix", name="disabled", url="http://127.0.0.1:9", write_back=True, enabled=False),
    ]
    annotator = review_annotator(sources, {"faithfulness"})
    assert [t.config.name for t in annotator.targets] == ["on"] and annotator.judges == {"faithfulness"}
    assert review_annotator([], {"faithfulness"}).targets == []
