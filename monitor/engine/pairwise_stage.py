"""PairwiseStage: the traces workers offer → pairs of a baseline and a candidate → the pairwise judge, on the loop.

For each `variants.pairwise` entry a PairingBook (pairing.py) pairs the offered traces by key. A pair that is
sampled in (by the candidate's trace id, as judges sample traces) becomes an asyncio task that judges it in
both orders through the shared judge engine (`evaluators.judges.judge_pair`; the engine's concurrency, rate
and budget apply, under the entry's evaluator label). Its result is a result of the pairwise evaluator on the
CANDIDATE's trace: counted in the metrics (on the candidate's variant), in agent_eval_pairwise_total, and added
to the trace in the result store (`LateResults`), with the baseline partner in its details.

Skips: a trace left unpaired after `window` (or given up beyond `max_waiting`, or waiting at shutdown) is a
`no_pair` skip on its own trace and variant; a sampled-out pair is a `sampled_out` skip on the candidate; a
pair whose judgement fails in either order has that skip. At most `max_pending` pairs are judged at once:
beyond, a pair is a `judge_unavailable` skip at once. At shutdown, judgements still running after the grace
period are cancelled, each counted as the same skip.

With a `keeper` (the result store keeps waiting judgements, pending.py) every offer an entry takes is kept, one
row per (offer, entry), until the result that settles it is written: the pair's result settles both traces' rows,
a `no_pair` skip its own. At shutdown the unpaired traces and the pairs being judged then stay kept (no skip), and
the next start puts them back in their books with their original offer time (pending_resume.restore_offers: `hold`
and `place`), so their `window` runs on across the restart and a pair straddling it is still judged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from evaluators.judges import JudgeCall, PairwiseJudge, judge_pair
from evaluators.judges.control import judge_sampled_in
from evaluators.sdk import EvalResult, SkipReason
from evaluators.signatures import FailureSignature
from monitor.config.judges import JudgesConfig
from monitor.config.variants import PairwiseConfig
from monitor.engine.judge_stage import TraceKey, drain_tasks, late_results
from monitor.engine.pairing import Pair, PairingBook, PairOffer
from monitor.engine.pending import PendingKeeper
from monitor.engine.signing import Signer
from monitor.json_text import compact_json_or_str
from monitor.logutil import RateLimitedLogger
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import LateResults, ResultRow, bounded, result_row

log = logging.getLogger(__name__)

ApplyTally = Callable[[MetricsTally], None]
StoreWrite = Callable[[Sequence[LateResults]], None]
CountPair = Callable[[str, str, str, str], None]  # (evaluator, baseline, candidate, outcome)
Done = tuple[PairOffer, ResultRow, tuple[str, ...]]  # a trace's row, and the kept rows it settles


class PairwiseStage:
    def __init__(
        self,
        entries: Sequence[PairwiseConfig],
        judges: Mapping[str, PairwiseJudge],
        judge: JudgeCall,
        apply_tally: ApplyTally,
        write: StoreWrite | None = None,
        count_pair: CountPair | None = None,
        *,
        max_pending: int = JudgesConfig.model_fields["max_pending"].default,
        clock: Callable[[], float] = time.monotonic,
        sweep_seconds: float = 1.0,
        signer: Signer | None = None,
        keeper: PendingKeeper | None = None,
    ) -> None:
        """`judges`: a PairwiseJudge per entry's `evaluator`; `judge`: the engine's `judge` coroutine function;
        `clock`: the monotonic clock of the windows; `sweep_seconds`: how often unpaired traces are given up;
        `keeper`: where the offers waiting are kept (None: nowhere)."""
        missing = sorted({e.evaluator for e in entries} - set(judges))
        if missing:
            raise ValueError(f"no pairwise judge for {', '.join(missing)}")
        self.books = [PairingBook(entry, clock) for entry in entries]
        self.judges = dict(judges)
        self.signer = signer if signer is not None else Signer()
        self._judge = judge
        self._apply = apply_tally
        self._write = write
        self._count_pair = count_pair
        self.max_pending = max_pending
        self.sweep_seconds = sweep_seconds
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._unavailable = RateLimitedLogger(log, per_minute=1)
        self._closed = False
        self.keeper = keeper
        self._kept: dict[tuple[int, str], str] = {}  # (book index, trace id) → its kept row's id
        self.offered = 0
        self.judged = 0

    @property
    def pending(self) -> int:
        """Pairs being judged."""
        return len(self._tasks)

    @property
    def waiting(self) -> int:
        """Unpaired traces held, over every entry."""
        return sum(book.waiting for book in self.books)

    async def start(self) -> None:
        """Start giving up unpaired traces every `sweep_seconds`."""
        if self._sweeper is None and not self._closed:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_loop(), name="pairwise sweep")

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_seconds)
            try:
                self.sweep()
            except Exception:
                log.exception("pairwise: giving up unpaired traces failed")

    # --- offers and pairs ---------------------------------------------------------------------------------
    def submit(self, offers: Iterable[PairOffer]) -> None:
        """Pair the offered traces (on the event loop thread); each pair is judged, sampled out or refused."""
        done: list[Done] = []
        kept = []
        now = time.time()
        for offer in offers:
            self.offered += 1
            for index, book in enumerate(self.books):
                if self._closed:
                    if book.accepts(offer):
                        done.append((offer, _no_pair(book, offer, "shutdown"), ()))
                    continue
                if self.keeper is not None and book.accepts(offer) and (index, offer.trace_id) not in self._kept:
                    key = self._kept[(index, offer.trace_id)] = self.keeper.new_id()
                    kept.append(self.keeper.offer_row(offer, entry_key(book), key, now))
                done += self.place(index, offer)
        if self.keeper is not None:
            self.keeper.keep(kept)  # before the results that settle them
        self._record(done)

    def place(self, index: int, offer: PairOffer, since: float | None = None) -> list[Done]:
        """Offer `offer` to book `index` (arrived `since`, on its clock); the rows decided at once."""
        book = self.books[index]
        pair, dropped = book.offer(offer, since)
        done = [(o, _no_pair(book, o, "overflow"), self.settle(index, o)) for o in dropped]
        if pair is not None:
            decided = self._start(book, pair)
            if decided is not None:
                done.append((pair.candidate, decided, self.settle(index, *pair)))
        return done

    def hold(self, index: int, trace_id: str, key: str) -> None:
        """Book `index`'s offer of `trace_id` is kept as row `key` (restored after a restart)."""
        self._kept[(index, trace_id)] = key

    def record(self, done: list[Done]) -> None:
        self._record(done)

    def settle(self, index: int, *offers: PairOffer) -> tuple[str, ...]:
        """The kept rows of `offers` in book `index`, no longer held (their result is on its way)."""
        keys = (self._kept.pop((index, o.trace_id), None) for o in offers)
        return tuple(key for key in keys if key is not None)

    def sweep(self) -> int:
        """Give up the traces that waited their entry's `window` without a partner; returns how many."""
        done = [
            (o, _no_pair(book, o, "expired"), self.settle(index, o))
            for index, book in enumerate(self.books)
            for o in book.expire()
        ]
        self._record(done)
        return len(done)

    def _start(self, book: PairingBook, pair: Pair) -> ResultRow | None:
        """Start judging `pair`; the candidate's row at once when it is sampled out or refused, else None."""
        entry = book.entry
        if not judge_sampled_in(pair.candidate.trace_id, entry.sampling):
            return _row(book, pair, EvalResult.skip(SkipReason.SAMPLED_OUT, f"sampled out at rate {entry.sampling:g}"))
        if len(self._tasks) >= self.max_pending:
            return _row(book, pair, EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, "pairwise backlog full"))
        task = asyncio.get_running_loop().create_task(self._run(book, pair), name=f"pairwise {entry.evaluator}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return None

    async def _run(self, book: PairingBook, pair: Pair) -> None:
        entry = book.entry
        baseline, candidate = pair
        started = time.perf_counter()
        question = baseline.input if baseline.input is not None else candidate.input
        try:
            result = await judge_pair(
                self._judge, self.judges[entry.evaluator], question, baseline.output, candidate.output,
                name=entry.evaluator,
            )  # fmt: skip
        except asyncio.CancelledError:
            if self.keeper is None:  # else kept for the next start, uncounted
                skip = EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, "cancelled at shutdown")
                self._record([(candidate, _row(book, pair, skip), ())])
            raise
        except Exception as exc:  # the engine answers its own failures with skips: this is a bug, not an outage
            log.exception("pairwise judge %s failed on traces %s and %s", entry.evaluator, *(o.trace_id for o in pair))
            result = EvalResult.skip(SkipReason.ERROR, f"{type(exc).__name__}: {exc}"[:300])
        if result.skip_reason is SkipReason.JUDGE_UNAVAILABLE:
            self._unavailable.warning("unavailable", "pairwise judge %s: %s", entry.evaluator, result.explanation)
        outcome = result.details.get("outcome") if not result.is_skipped else None
        if outcome is not None and self._count_pair is not None:
            try:
                self._count_pair(entry.evaluator, entry.baseline, entry.candidate, str(outcome))
            except Exception:
                log.exception("could not count a pair of %s", entry.evaluator)
        self.judged += 1
        seconds = time.perf_counter() - started
        signature = self.signer(book.entry.evaluator, "trace", None, result)
        settled = self.settle(self.books.index(book), *pair)
        self._record([(candidate, _row(book, pair, result, seconds, signature), settled)])

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)

    def _record(self, done: list[Done]) -> None:
        """Count every row on its trace's variant and add it to its trace in the store with the kept rows it
        settles (sampled-out rows are only counted, as everywhere: their kept rows are forgotten)."""
        if not done:
            return
        tally = MetricsTally()
        late: dict[TraceKey, list[ResultRow]] = {}
        resolved: dict[TraceKey, list[str]] = {}
        forgotten: list[str] = []
        for offer, row, settled in done:
            tally.add_results(offer.service, offer.trace_id, (row,), offer.variant)
            trace = (offer.trace_id, offer.service, offer.variant, "")
            if row.skip_reason != SkipReason.SAMPLED_OUT:
                late.setdefault(trace, []).append(row)
                resolved.setdefault(trace, []).extend(settled)
            else:
                forgotten.extend(settled)
        try:
            self._apply(tally)
        except Exception:
            log.exception("could not record %d pairwise results", len(done))
        if self._write is not None and late:
            self._write(late_results(late, resolved))
        if self.keeper is not None:
            self.keeper.forget(forgotten)

    # --- shutdown ------------------------------------------------------------------------------------------
    async def drain(self, timeout: float) -> int:
        """Wait up to `timeout` for the pairs being judged; returns how many are still pending."""
        return await drain_tasks(self._tasks, timeout)

    async def shutdown(self, grace: float) -> None:
        """Take no more offers; the unpaired traces are no_pair skips; wait up to `grace` for the pairs being
        judged, then cancel the rest (each a judge_unavailable skip). Idempotent."""
        if not self._closed:
            self._closed = True
            if self._sweeper is not None:
                self._sweeper.cancel()
                await asyncio.gather(self._sweeper, return_exceptions=True)
            flushed = [(book, o) for book in self.books for o in book.flush()]
            if self.keeper is None:  # else kept for the next start, their windows running on
                self._record([(o, _no_pair(book, o, "shutdown"), ()) for book, o in flushed])
            elif flushed:
                log.info("shutdown: %d unpaired trace(s) kept for the next start", len(flushed))
        if await self.drain(grace):
            tasks = set(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def entry_key(book: PairingBook) -> tuple[str, str, str, str]:
    """What names a `variants.pairwise` entry in a kept offer: (evaluator, baseline, candidate, pair_by)."""
    entry = book.entry
    return entry.evaluator, entry.baseline, entry.candidate, entry.pair_by


def _no_pair(book: PairingBook, offer: PairOffer, why: str) -> ResultRow:
    """The `no_pair` skip of a trace that was not paired: it `expired`, was given up on `overflow`, or was
    waiting at `shutdown`."""
    entry = book.entry
    partner = entry.candidate if offer.variant == entry.baseline else entry.baseline
    wanted = f"a trace of variant {partner!r} with the same {entry.pair_by}"
    explanation = {
        "expired": f"no pair: {wanted} did not come within {entry.window:g} s",
        "overflow": f"no pair: given up waiting for {wanted}, over max_waiting ({entry.max_waiting}) unpaired traces",
        "shutdown": f"no pair: the daemon stopped before {wanted} came",
    }[why]
    details = compact_json_or_str({"pair_by": entry.pair_by, "partner_variant": partner, "why": why})
    return ResultRow(
        None, None, None, entry.evaluator, "trace", None, None, "no_pair", bounded(explanation), details, 0.0
    )


def _row(
    book: PairingBook, pair: Pair, result: EvalResult, seconds: float = 0.0, signature: FailureSignature | None = None
) -> ResultRow:
    """The pair's result as a row of the pairwise evaluator on the candidate's trace, its partner in details."""
    entry = book.entry
    details = {
        **result.details,
        "partner_trace_id": pair.baseline.trace_id,
        "partner_variant": pair.baseline.variant,
        "partner_service": pair.baseline.service,
        "pair_by": entry.pair_by,
    }
    return result_row(
        dataclasses.replace(result, details=details),
        span_id=None,
        agent=None,
        model=None,
        evaluator=entry.evaluator,
        level="trace",
        seconds=seconds,
        signature=signature,
    )
