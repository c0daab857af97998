"""The review queue (/review/queue): which result a reviewer should look at next, from the rules of
`review.queue` (config/review.py), and how far the reviewers have got.

Rules, highest priority first (ties in config order): `alerting` (failing results of an evaluator whose in-process
alert is firing), `new_signature` (the first results of a failure signature first seen lately), `near_threshold`
(scored results within a margin of their evaluator's threshold), `sample` (a share of each evaluator's results, the
LLM judges' by default). Within a rule the newest result comes first. Only results evaluated within
`review.queue.window` and without a review in force are offered, and not those this reviewer skipped.

Reviews go round the evaluators (`spread`): while a configured evaluator has fewer than `per_evaluator_target`
reviews made within the window (calibrate's minimum by default), the evaluators are taken by their number of
reviews, fewest first, and each group of equals by the rules above (so a firing evaluator's failures lead among
equals); an evaluator without results to offer is passed over. Once every evaluator with results to offer has its
target, the rules alone decide. A firing alert thus gets a review in every round, not every review.

Nothing is kept here: every call reads the store (queue_reads.py), so replicas sharing a PostgreSQL store serve one
queue (two reviewers at once may be offered the same result: the later review supersedes the earlier).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from monitor.config.review import QueueConfig
from monitor.review.queue_sql import Candidate, RuleSpec
from monitor.store.reviews import ResultKey

BACKLOG_CAP = 1000  # a rule's backlog is counted up to this (shown as "1000+" beyond)
DAY = 86400.0


class QueueEvaluator(NamedTuple):
    """A configured evaluator as the queue sees it: its name (the stored `evaluator`), whether it is an LLM judge,
    and its score threshold (None: it has none)."""

    name: str
    judge: bool = False
    threshold: float | None = None


class QueueStore(Protocol):
    """What the queue reads (queue_reads.QueueReads: the store's review reader)."""

    def queue_pick(
        self, specs: Sequence[RuleSpec], since: float, skipped: Collection[ResultKey] = ()
    ) -> tuple[RuleSpec, Candidate] | None: ...

    def queue_reviewed(self, evaluators: Sequence[str], since: float, cap: int) -> dict[str, int]: ...

    def queue_backlog(self, specs: Sequence[RuleSpec], since: float, cap: int) -> list[tuple[str, int]]: ...

    def reviews_since(self, since: float, reviewer: str | None) -> tuple[int, int]: ...


@dataclass(frozen=True)
class QueueItem:
    """The result to review next and why it is in the queue (`rule`, `reason`; `turn`: the evaluator's reviews
    in the window when it was picked as the evaluator with the fewest, None when the rules alone picked it)."""

    key: ResultKey
    rule: str
    reason: str
    passed: bool | None
    score: float | None
    threshold: float | None
    explanation: str | None
    evaluated_at: float
    service: str | None
    signature: str | None
    turn: int | None = None


class RuleBacklog(NamedTuple):
    rule: str
    results: int  # at most BACKLOG_CAP
    more: bool  # more than `results`


@dataclass(frozen=True)
class QueueProgress:
    """Reviews written today (UTC) by this reviewer and by everyone, and the unreviewed results of each rule."""

    reviewer: str | None
    mine_today: int
    all_today: int
    backlog: list[RuleBacklog]

    @property
    def backlog_total(self) -> int:
        return sum(b.results for b in self.backlog)


class ReviewQueue:
    """The queue over `store` (the review reader), for the configured `evaluators`; `firing()` lists the
    evaluators whose in-process alert is firing (the daemon's alert states)."""

    def __init__(
        self,
        store: QueueStore,
        config: QueueConfig,
        evaluators: Iterable[QueueEvaluator],
        firing: Callable[[], Iterable[str]] = tuple,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config
        self.evaluators = list(evaluators)
        self.firing = firing
        self.clock = clock

    def next(self, reviewer: str | None, skipped: Collection[ResultKey] = ()) -> QueueItem | None:
        """The next unreviewed result this reviewer has not skipped: the spread's, else the rules' (None: the
        queue is empty)."""
        now = self.clock()
        since = now - self.config.window
        specs = self.specs(now)
        picked = self.store.queue_pick([*self.spread(specs, since), *specs], since, skipped)
        if picked is None:
            return None
        spec, hit = picked
        threshold = self._thresholds().get(hit.evaluator)
        return QueueItem(
            key=ResultKey(hit.trace_id, hit.evaluator, hit.level, hit.span_id),
            rule=spec.rule,
            reason=self.reason(spec.rule, hit.evaluator, spec.turn),
            passed=hit.passed,
            score=hit.score,
            threshold=threshold,
            explanation=hit.explanation,
            evaluated_at=hit.evaluated_at,
            service=hit.service,
            signature=hit.signature,
            turn=spec.turn,
        )

    def spread(self, specs: Sequence[RuleSpec], since: float) -> list[RuleSpec]:
        """`specs` narrowed to each group of configured evaluators below the target with as many reviews made
        since `since`, the group with the fewest first ([] when the target is 0 or every evaluator has it)."""
        target = self.config.per_evaluator_target
        names = list(dict.fromkeys(e.name for e in self.evaluators))
        if target <= 0 or not names:
            return []
        counts = self.store.queue_reviewed(names, since, target)
        groups: dict[int, set[str]] = {}
        for name in names:
            if (n := counts.get(name, 0)) < target:
                groups.setdefault(n, set()).add(name)
        narrowed = (spec.only(groups[n], n) for n in sorted(groups) for spec in specs)
        return [spec for spec in narrowed if not spec.empty]

    def progress(self, reviewer: str | None) -> QueueProgress:
        now = self.clock()
        mine, everyone = self.store.reviews_since(now - now % DAY, reviewer)
        counts = self.store.queue_backlog(self.specs(now), now - self.config.window, BACKLOG_CAP)
        backlog = [RuleBacklog(rule, min(n, BACKLOG_CAP), n > BACKLOG_CAP) for rule, n in counts]
        return QueueProgress(reviewer, mine if reviewer else 0, everyone, backlog)

    def specs(self, now: float) -> list[RuleSpec]:
        """The enabled rules as the store reads them, highest priority first (ties: alerting, new_signature,
        near_threshold, sample)."""
        c = self.config
        ranked: list[tuple[int, RuleSpec]] = []
        if c.alerting.enabled:
            firing = tuple(sorted(set(self.firing())))
            ranked.append((c.alerting.priority, RuleSpec("alerting", evaluators=firing, failing=True)))
        if c.new_signature.enabled:
            spec = RuleSpec("new_signature", failing=True, new_since=now - c.new_signature.within,
                            first=c.new_signature.first)  # fmt: skip
            ranked.append((c.new_signature.priority, spec))
        if c.near_threshold.enabled:
            margin = c.near_threshold.margin
            thresholds = self._thresholds(c.near_threshold.evaluators)
            near = tuple((name, t - margin, t + margin) for name, t in sorted(thresholds.items()))
            ranked.append((c.near_threshold.priority, RuleSpec("near_threshold", near=near)))
        if c.sample.enabled:
            chosen = self._chosen(c.sample.evaluators)
            ranked.append((c.sample.priority, RuleSpec("sample", evaluators=chosen, share=c.sample.share)))
        return [spec for _, spec in sorted(ranked, key=lambda pair: -pair[0])]  # stable

    def reason(self, rule: str, evaluator: str, turn: int | None = None) -> str:
        """Why a result of `evaluator` is in the queue, in words (`turn`: picked by the spread with that many
        reviews of `evaluator`)."""
        c = self.config
        if rule == "alerting":
            lead = "come first" if turn is None else "come first among evaluators with as few reviews"
            why = f"{evaluator}'s alert is firing: its failing results {lead}"
        elif rule == "new_signature":
            why = f"one of the first {c.new_signature.first} results of a failure signature new in the last " \
                  f"{_duration(c.new_signature.within)}"  # fmt: skip
        elif rule == "near_threshold":
            threshold = self._thresholds().get(evaluator)
            where = f" {threshold:g}" if threshold is not None else ""
            why = f"its score is within {c.near_threshold.margin:g} of the threshold{where}"
        else:
            why = f"a {c.sample.share:.0%} sample of {evaluator}'s results"
        if turn is None:
            return why
        return (f"{why}; reviews go round the evaluators: {evaluator} has {turn} of the {c.per_evaluator_target} "
                f"reviews wanted per evaluator in the last {_duration(c.window)}, and no other evaluator with results "
                "to review has fewer")  # fmt: skip

    def _chosen(self, choice: Any) -> tuple[str, ...] | None:
        """The evaluator names of a rule's `evaluators` (None: any)."""
        if choice == "all":
            return None
        if choice == "judges":
            return tuple(e.name for e in self.evaluators if e.judge)
        return tuple(choice)

    def _thresholds(self, choice: Any = "all") -> dict[str, float]:
        chosen = self._chosen(choice)
        return {
            e.name: e.threshold
            for e in self.evaluators
            if e.threshold is not None and (chosen is None or e.name in chosen)
        }


def review_queue(
    config: QueueConfig,
    evaluators: Iterable[Any],
    store: QueueStore | None,
    alert_states: Callable[[], Iterable[Any]] = tuple,
) -> ReviewQueue | None:
    """The daemon's queue: over its review reader `store`, for its configured evaluators (`label`, `evaluator`:
    an LLM judge's kind is llm_judge), the evaluators whose alert is firing from `alert_states()` (the metrics'
    AlertState list). None when the queue is off or there is no store."""
    if store is None or not config.enabled:
        return None
    listed = [
        QueueEvaluator(c.label, getattr(c.evaluator, "kind", "") == "llm_judge", _threshold(c.evaluator))
        for c in evaluators
    ]
    return ReviewQueue(store, config, listed, lambda: [s.evaluator for s in alert_states() if s.active])


def _threshold(evaluator: Any) -> float | None:
    value = getattr(evaluator, "threshold", None)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _duration(seconds: float) -> str:
    for unit, size in (("d", DAY), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
