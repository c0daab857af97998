"""Pairing the variants' traces for the pairwise judge, and the stage that judges the pairs (a fake judge model
here; tests/monitor/engine/test_pairwise_on_the_wire.py has the real client against the fake Gemini server)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from evaluators.judges.control import judge_sampled_in
from evaluators.sdk import EvalResult, SkipReason
from monitor.config.variants import VariantsConfig
from monitor.engine.pairing import PairingBook, PairOffer
from monitor.engine.pairwise_stage import PairwiseStage
from tests.monitor.engine.pairs import JUDGE, Clock, FakeJudgeModel, Recorder, offers, prefer, variants

ENTRY = {"baseline": "1.4", "candidate": "1.5", "window": "10m"}


def stage_for(
    config: VariantsConfig, model: Any, recorder: Recorder, clock: Callable[[], float] | None = None, **kw: Any
) -> PairwiseStage:
    clock = clock or Clock()
    return PairwiseStage(
        config.pairwise, {"pairwise_quality": JUDGE}, model, recorder.tallies.append, recorder.writes.extend,
        recorder.count_pair, clock=clock, **kw,
    )  # fmt: skip


def run(stage: PairwiseStage, *batches: Sequence[PairOffer]) -> None:
    """Submit each batch on a running loop and wait for the judgements."""

    async def scenario() -> None:
        for batch in batches:
            stage.submit(batch)
        assert await stage.drain(5) == 0

    asyncio.run(scenario())


# --- pairing --------------------------------------------------------------------------------------------


def test_pairs_by_normalised_input_and_both_orders_are_judged() -> None:
    config = variants(ENTRY)
    baseline, candidate, other = offers(
        config,
        ("1.4", "What is the weather in Paris?", "Sunny."),
        ("1.5", "  what is THE weather\nin paris? ", "Sunny, 21 °C, light wind."),
        ("1.5", "What is the weather in Rome?", "Rainy."),
    )
    model, recorder = FakeJudgeModel(prefer("Sunny, 21 °C, light wind.")), Recorder()
    stage = stage_for(config, model, recorder)
    run(stage, [baseline], [candidate, other])
    assert [name for name, _ in model.requests] == ["pairwise_quality"] * 2  # the engine's judge name: the label
    orders = [
        (r.prompt.split('"answer_a">\n')[1][:6], r.prompt.split('"answer_b">\n')[1][:6]) for _, r in model.requests
    ]
    assert sorted(orders) == [("Sunny,", "Sunny."), ("Sunny.", "Sunny,")]  # A/B swapped between the two calls
    assert recorder.pairs == [("pairwise_quality", "1.4", "1.5", "win")]
    [row] = recorder.rows()[candidate.trace_id]  # on the candidate's trace, nothing on the baseline's
    assert baseline.trace_id not in recorder.rows() and other.trace_id not in recorder.rows()
    assert (row["evaluator"], row["level"], row["score"], row["passed"]) == ("pairwise_quality", "trace", 1.0, True)
    details = row["details"]
    assert (details["partner_trace_id"], details["partner_variant"], details["outcome"]) == (
        baseline.trace_id, "1.4", "win",
    )  # fmt: skip
    assert (details["baseline_first"], details["candidate_first"]) == ("B", "A")
    assert recorder.outcomes("1.5") == {"pass": 1} and recorder.outcomes("1.4") == {}
    assert stage.waiting == 1  # the Rome question still waits for a baseline answer


def test_pairs_by_a_task_id_attribute_whatever_the_wording() -> None:
    config = variants({**ENTRY, "pair_by": "task.id"})
    traces = offers(
        config,
        ("1.4", "Book a table for two", "Booked at 8 pm.", {"task.id": "t-1"}),
        ("1.5", "Please book a table for 2 people", "I could not book.", {"task.id": "t-1"}),
        ("1.5", "Book a table for two", "Booked.", {"task.id": "t-2"}),
        ("1.5", "Book a table for two", "Booked.", None),  # no task id: nothing to pair on, no offer
    )
    assert len(traces) == 3
    model, recorder = FakeJudgeModel(prefer("Booked at 8 pm.")), Recorder()
    run(stage_for(config, model, recorder), traces)
    assert recorder.pairs == [("pairwise_quality", "1.4", "1.5", "loss")]
    [row] = recorder.rows()[traces[1].trace_id]
    assert (row["passed"], row["score"], row["details"]["partner_trace_id"]) == (False, 0.0, traces[0].trace_id)
    assert "Book a table for two" in model.requests[0][1].prompt  # the baseline's wording is the question


def test_orders_that_disagree_are_a_tie_not_a_win() -> None:
    config = variants(ENTRY)
    model, recorder = FakeJudgeModel(lambda a, b: "A"), Recorder()  # always the first answer: position bias
    run(stage_for(config, model, recorder), offers(config, ("1.4", "Q?", "one"), ("1.5", "Q?", "two")))
    assert len(model.requests) == 2 and recorder.pairs == [("pairwise_quality", "1.4", "1.5", "tie")]
    [[row]] = recorder.rows().values()
    assert (row["score"], row["passed"], row["details"]["consistent"]) == (0.5, True, False)
    assert "disagree" in row["explanation"]


def test_first_come_first_paired_and_a_trace_pairs_once() -> None:
    config = variants(ENTRY)
    b1, b2, c1, c2, c3 = offers(
        config, ("1.4", "Q?", "b1"), ("1.4", "Q?", "b2"), ("1.5", "Q?", "c1"), ("1.5", "Q?", "c2"), ("1.5", "Q?", "c3")
    )
    model, recorder = FakeJudgeModel(), Recorder()
    stage = stage_for(config, model, recorder)
    run(stage, [b1, b2], [c1], [c2], [c3])
    partners = {trace: rows[0]["details"]["partner_trace_id"] for trace, rows in recorder.rows().items()}
    assert partners == {c1.trace_id: b1.trace_id, c2.trace_id: b2.trace_id}
    assert stage.waiting == 1 and len(model.requests) == 4  # c3 waits; two calls per pair
    run(stage, [b1])  # the same baseline offered again is a new partner only for the waiting c3
    assert stage.waiting == 0 and len(model.requests) == 6


def test_each_entry_pairs_on_its_own_and_other_variants_are_ignored() -> None:
    config = variants(ENTRY, {"baseline": "1.4", "candidate": "1.6"})
    traces = offers(config, ("1.4", "Q?", "base"), ("1.5", "Q?", "five"), ("1.6", "Q?", "six"), ("1.7", "Q?", "x"))
    assert [o.variant for o in traces] == ["1.4", "1.5", "1.6"]  # 1.7 is in no entry: no pair keys, no offer
    model, recorder = FakeJudgeModel(prefer("base")), Recorder()
    run(stage_for(config, model, recorder), traces)
    assert sorted(recorder.pairs) == [
        ("pairwise_quality", "1.4", "1.5", "loss"),
        ("pairwise_quality", "1.4", "1.6", "loss"),
    ]


# --- traces left unpaired --------------------------------------------------------------------------------


def test_an_unpaired_trace_is_a_no_pair_skip_on_its_own_variant_after_the_window() -> None:
    config, clock = variants({**ENTRY, "window": "60s"}), Clock()
    model, recorder = FakeJudgeModel(), Recorder()
    stage = stage_for(config, model, recorder, clock)
    lonely, late = offers(config, ("1.4", "Q?", "alone"), ("1.5", "Q?", "too late"))

    async def scenario() -> list[int]:
        stage.submit([lonely])
        clock.now += 59.9
        swept = [stage.sweep()]
        clock.now += 0.1
        swept.append(stage.sweep())
        stage.submit([late])  # its partner was given up: it waits in turn
        return swept

    assert asyncio.run(scenario()) == [0, 1]
    assert recorder.outcomes("1.4") == {"no_pair": 1} and model.requests == []
    [row] = recorder.rows()[lonely.trace_id]
    assert (row["skip_reason"], row["passed"], row["evaluator"]) == ("no_pair", None, "pairwise_quality")
    assert "'1.5'" in row["explanation"] and "60 s" in row["explanation"]
    assert row["details"] == {"pair_by": "input", "partner_variant": "1.5", "why": "expired"}
    assert stage.waiting == 1


def test_the_sweeper_gives_up_unpaired_traces_on_its_own() -> None:
    config, clock = variants({**ENTRY, "window": "1s"}), Clock()
    recorder = Recorder()
    stage = stage_for(config, FakeJudgeModel(), recorder, clock, sweep_seconds=0.01)

    async def scenario() -> None:
        await stage.start()
        stage.submit(offers(config, ("1.5", "Q?", "a")))
        clock.now += 5
        for _ in range(200):
            if recorder.outcomes():
                break
            await asyncio.sleep(0.01)
        await stage.shutdown(0)

    asyncio.run(scenario())
    assert recorder.outcomes("1.5") == {"no_pair": 1}


def test_max_waiting_gives_up_the_oldest_unpaired_trace() -> None:
    config = variants({**ENTRY, "max_waiting": 2})
    model, recorder = FakeJudgeModel(), Recorder()
    stage = stage_for(config, model, recorder)
    first, second, third, for_first, for_third = offers(
        config, ("1.4", "Q1", "a"), ("1.4", "Q2", "b"), ("1.4", "Q3", "c"), ("1.5", "Q1", "d"), ("1.5", "Q3", "e")
    )
    run(stage, [first, second, third])
    assert [w.trace_id for w in recorder.writes] == [first.trace_id] and recorder.outcomes() == {"no_pair": 1}
    assert recorder.rows()[first.trace_id][0]["details"]["why"] == "overflow"
    run(stage, [for_first, for_third])
    assert (
        len(recorder.pairs) == 1
        and recorder.rows()[for_third.trace_id][0]["details"]["partner_trace_id"] == third.trace_id
    )
    # for_first made room by giving up `second`; it waits alone (its partner was given up before it came).
    assert stage.waiting == 1 and recorder.outcomes("1.4") == {"no_pair": 2}


def test_a_book_holds_at_most_max_waiting_traces() -> None:
    config = variants({**ENTRY, "max_waiting": 3})
    book = PairingBook(config.pairwise[0], Clock())
    many = offers(config, *[("1.4", f"Q{n}", "a") for n in range(10)])
    dropped = [o for offer in many for o in book.offer(offer)[1]]
    assert book.waiting == 3 and dropped == many[:7]


# --- sampling, failures, limits, shutdown ------------------------------------------------------------------


def test_sampling_picks_pairs_by_the_candidates_trace_id() -> None:
    config = variants({**ENTRY, "sampling": 0.5})
    traces = offers(config, *[(v, f"Q{n}", f"{v}-{n}") for n in range(40) for v in ("1.4", "1.5")])
    model, recorder = FakeJudgeModel(prefer("never")), Recorder()
    run(stage_for(config, model, recorder), traces)
    candidates = [o for o in traces if o.variant == "1.5"]
    judged = [o.trace_id for o in candidates if judge_sampled_in(o.trace_id, 0.5)]
    assert 5 < len(judged) < 35
    assert recorder.outcomes("1.5") == {"pass": len(judged), "sampled_out": 40 - len(judged)}
    assert len(model.requests) == 2 * len(judged) and len(recorder.pairs) == len(judged)
    assert sorted(recorder.rows()) == sorted(judged)  # sampled-out skips are counted, not stored


def test_a_failed_order_makes_the_pair_that_skip_and_counts_no_outcome() -> None:
    config = variants(ENTRY)
    down = EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, "pairwise_quality: the judge model is unavailable (http_503)")
    model = FakeJudgeModel(lambda a, b: down if a == "two" else "B")
    recorder = Recorder()
    run(stage_for(config, model, recorder), offers(config, ("1.4", "Q?", "one"), ("1.5", "Q?", "two")))
    assert len(model.requests) == 2 and recorder.pairs == []
    assert recorder.outcomes("1.5") == {"judge_unavailable": 1}
    [[row]] = recorder.rows().values()
    assert row["skip_reason"] == "judge_unavailable" and "candidate first" in row["explanation"]


def test_over_max_pending_a_pair_is_refused_at_once() -> None:
    config = variants(ENTRY)
    release = asyncio.Event()

    async def slow(judge, request, *, name):
        await release.wait()
        return await FakeJudgeModel()(judge, request, name=name)

    recorder = Recorder()
    stage = PairwiseStage(config.pairwise, {"pairwise_quality": JUDGE}, slow, recorder.tallies.append,
                          recorder.writes.extend, recorder.count_pair, max_pending=1)  # fmt: skip
    traces = offers(config, ("1.4", "Q1", "a"), ("1.5", "Q1", "b"), ("1.4", "Q2", "c"), ("1.5", "Q2", "d"))

    async def scenario() -> tuple[int, dict[str, int]]:
        stage.submit(traces)
        pending, refused = stage.pending, recorder.outcomes()
        release.set()
        await stage.drain(5)
        return pending, refused

    assert asyncio.run(scenario()) == (1, {"judge_unavailable": 1})
    assert recorder.outcomes() == {"judge_unavailable": 1, "pass": 1}


def test_shutdown_gives_up_the_waiting_and_cancels_what_the_grace_period_did_not_finish() -> None:
    config = variants(ENTRY)

    async def hangs(judge, request, *, name):
        await asyncio.sleep(60)

    recorder = Recorder()
    stage = stage_for(config, hangs, recorder)
    pair = offers(config, ("1.4", "Q1", "a"), ("1.5", "Q1", "b"))
    waiting, after = offers(config, ("1.4", "Q2", "c"), ("1.5", "Q3", "d"))

    async def scenario() -> None:
        await stage.start()
        stage.submit([*pair, waiting])
        await stage.shutdown(grace=0.05)
        await stage.shutdown(grace=0.05)  # idempotent
        stage.submit([after])

    asyncio.run(scenario())
    assert stage.pending == 0 and stage.waiting == 0 and recorder.pairs == []
    assert recorder.outcomes("1.4") == {"no_pair": 1}
    assert recorder.outcomes("1.5") == {"judge_unavailable": 1, "no_pair": 1}
    rows = recorder.rows()
    assert rows[pair[1].trace_id][0]["explanation"] == "cancelled at shutdown"
    assert rows[waiting.trace_id][0]["details"]["why"] == "shutdown"


def test_an_engine_bug_is_an_error_skip_and_the_stage_goes_on() -> None:
    config = variants(ENTRY)

    async def broken(judge, request, *, name):
        if "crash" in request.prompt:
            raise RuntimeError("bug")
        return await FakeJudgeModel()(judge, request, name=name)

    recorder = Recorder()
    traces = offers(config, ("1.4", "Q1", "crash"), ("1.5", "Q1", "b"), ("1.4", "Q2", "c"), ("1.5", "Q2", "d"))
    run(stage_for(config, broken, recorder), traces)
    assert recorder.outcomes("1.5") == {"error": 1, "pass": 1}
    assert recorder.pairs == [("pairwise_quality", "1.4", "1.5", "tie")]
