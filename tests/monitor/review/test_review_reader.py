"""The ReviewReader, on SQLite and PostgreSQL: a trace through the store and back, masking, every filter, paging,
breakdowns."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import genai_prices
import pytest

from evaluators.sdk import builtin
from monitor.config.variants import VariantsConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.outcomes import STEP_FIELDS
from monitor.review.models import (
    AgentSpend,
    BreakdownGroup,
    ErrorSpan,
    ModelUsage,
    ResultFilter,
    ResultItem,
    ReviewReader,
    Step,
    TraceDetail,
    TraceSummary,
)
from monitor.review.of_store import reader_of
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store.health import StoreUnavailable
from monitor.store.sqlite import ResultStore
from tests.support.backends import Backend
from tests.support.store_builders import CARD, GOOGLE_KEY, OPENAI_KEY, agent_trace, detail, outcome, row

EVALUATORS = ["error_free", "tool_success_rate", "latency"]


def evaluator(variants: VariantsConfig | None = None) -> TraceEvaluator:
    configured = [ConfiguredEvaluator(builtin(name), name) for name in EVALUATORS]
    return TraceEvaluator(configured, store_results="all", variants=variants)


def library_price(model: str, tokens_in: int, tokens_out: int, start_ns: int) -> float:
    """genai-prices' own figure for one call (what the store must hold, computed here from the library)."""
    usage = genai_prices.Usage(input_tokens=tokens_in, output_tokens=tokens_out)
    when = datetime.fromtimestamp(start_ns / 1e9, UTC)
    return float(genai_prices.calc_price(usage, model, genai_request_timestamp=when).total_price)


def test_a_trace_goes_through_the_store_and_back_as_the_models_say(backend: Backend) -> None:
    trace = agent_trace()
    big, mini = (
        library_price(c.model or "", c.metrics.input_tokens, c.metrics.output_tokens, c.start_time)
        for c in trace.get_llm_calls()
    )
    evaluated = evaluator().outcome(trace)
    store = backend.store()
    store.write([evaluated])
    got = reader_of(store).trace(trace.trace_id)
    assert got is not None
    at = got.summary.evaluated_at
    d = evaluated.detail
    assert d is not None
    expected = TraceDetail(
        summary=TraceSummary(
            trace_id=trace.trace_id,
            evaluated_at=at,
            service="shop",
            agents=["planner"],
            input="where?",
            input_source="user message of the first LLM request",  # the agent span records no request
            output="Paris it is.",
            span_count=6,
            duration_ms=evaluated.duration_ms,
            has_errors=True,
            models=[ModelUsage(model="gpt-4o", calls=1, input_tokens=100, output_tokens=10, cost_usd=big),
                    ModelUsage(model="gpt-4o-mini", calls=1, input_tokens=200, output_tokens=20, cost_usd=mini)],
            tools=["search", "calc"],
            errors=[ErrorSpan(span_id=d.steps[4][0], name="calc", kind="tool", error="division by zero")],
            steps_truncated=False,
            cost_usd=big + mini,
            agent_spend=[AgentSpend(agent="planner", calls=2, cost_usd=big + mini)],
        ),
        steps=[Step(**dict(zip(STEP_FIELDS, step))) for step in d.steps],
        results=[
            ResultItem(trace_id=trace.trace_id, evaluated_at=at, evaluator=r.evaluator, level=r.level,
                       outcome="pass" if r.passed else "fail", score=r.score, explanation=r.explanation,
                       details=r.details, service="shop", agent=r.agent, model=r.model, span_id=r.span_id,
                       input_excerpt="where?", output_excerpt="Paris it is.")
            for r in sorted(evaluated.results, key=lambda r: bool(r.passed))  # failures first, then passes
        ],
    )  # fmt: skip
    assert got == expected
    assert [(s.model, s.cost_usd, s.cost_source) for s in got.steps if s.kind == "llm"] == [
        ("gpt-4o", big, "price_table"),
        ("gpt-4o-mini", mini, "price_table"),
    ]
    assert [(s.kind, s.depth, s.name) for s in got.steps] == [
        ("agent", 0, "planner"),
        ("retrieval", 1, "retrieval kb"),
        ("llm", 1, "chat gpt-4o"),
        ("tool", 1, "search"),
        ("tool", 1, "calc"),
        ("llm", 1, "chat gpt-4o-mini"),
    ]
    assert got.steps[2].text == "→ calls search" and got.steps[4].error == "division by zero"
    assert {r.outcome for r in got.results} == {"pass", "fail"}  # tool_success_rate fails on calc
    assert reader_of(store).trace("f" * 32) is None
    store.close()


def test_secrets_and_card_numbers_are_masked_wherever_they_are_stored(backend: Backend) -> None:
    trace = agent_trace("cd" * 16, secret=True)
    evaluated = evaluator().outcome(trace)
    evaluated = evaluated._replace(
        input=f"my card is {CARD}, key {GOOGLE_KEY}",
        results=(*evaluated.results, row("judge", False, explanation=f"the answer leaks {OPENAI_KEY} and {CARD}")),
    )
    store = backend.store()
    store.write([evaluated])
    store.close()
    # what is on disk, every column of every row
    stored = " ".join(str(v) for t in ("traces", "results") for r in backend.rows(f"SELECT * FROM {t}") for v in r)
    assert "Here is the key" in stored and "division by zero for" in stored  # the texts are there ...
    for secret in (OPENAI_KEY, GOOGLE_KEY, CARD, CARD.replace(" ", ""), "Q7xQ7xQ7x", "abcdefghijklmnopqrstuvwxyz0123"):
        assert secret not in stored  # ... without the secrets
    got = backend.reader().trace(trace.trace_id)
    assert got is not None
    assert got.summary.input == (
        "my card is [redacted credit_card: ****1111], key [redacted google_api_key: AIza****0123]"
    )
    assert got.summary.output is not None and "[redacted openai_key: sk-proj-****" in got.summary.output
    by_kind = {s.name: s for s in got.steps}
    assert by_kind["search"].text == '{"card": "[redacted credit_card: ****1111]"} → {"hits": 3}'
    assert by_kind["calc"].error == "division by zero for [redacted google_api_key: AIza****0123]"
    assert "[redacted openai_key:" in (by_kind["chat gpt-4o-mini"].text or "")
    assert got.summary.errors[0].error == by_kind["calc"].error
    (judged,) = [r for r in got.results if r.evaluator == "judge"]
    assert judged.explanation == (
        "the answer leaks [redacted openai_key: sk-proj-****xQ7x] and [redacted credit_card: ****1111]"
    )


def test_long_text_is_cut_after_it_is_masked(backend: Backend) -> None:
    long_answer = "x" * 4050 + " " + OPENAI_KEY  # the key starts past the kept 4000 characters
    store = backend.store()
    store.write([outcome("1" * 32, row("a", False, explanation="y" * 5000), answer=long_answer[:4064])])
    got = reader_of(store).trace("1" * 32)
    assert got is not None and got.summary.output is not None
    assert len(got.summary.output) == 4000 and got.summary.output.endswith("…") and "sk-proj" not in got.summary.output
    assert len(got.results[0].explanation or "") == 4000
    store.close()


def test_the_variant_goes_through_the_store_with_the_trace_and_each_of_its_results(backend: Backend) -> None:
    versions = VariantsConfig(attribute="service.version")
    evaluated = [evaluator(versions).outcome(agent_trace(f"{n}" * 32, version=v)) for n, v in ((1, "1.5"), (2, None))]
    assert [o.variant for o in evaluated] == ["1.5", ""]
    store = backend.store()
    store.write(evaluated)
    store.close()
    assert backend.rows("SELECT trace_id, variant FROM traces ORDER BY trace_id") == [("1" * 32, "1.5"), ("2" * 32, "")]
    reader = backend.reader()
    got = reader.trace("1" * 32)
    assert got is not None and got.summary.variant == "1.5"
    assert {r.variant for r in got.results} == {"1.5"} and {r.outcome for r in got.results} == {"pass", "fail"}
    other = reader.trace("2" * 32)
    assert other is not None and other.summary.variant == "" and {r.variant for r in other.results} == {""}
    items = reader.results(ResultFilter(), 100).items
    assert {(i.trace_id[0], i.variant) for i in items} == {("1", "1.5"), ("2", "")}


def populate(store: ResultStore) -> None:
    """T1 (shop, variant 1.5: agents planner, coder; model gpt-4o; tools search, calc), T2 (bank, variant 1.4: no
    agent or model; search), T3 (shop, no variant: planner; gpt-4o-mini; no tool)."""
    store.write(
        [
            outcome(
                "1" * 32,
                row("a", True),
                row("b", False),
                row("c", None, "needs_ground_truth"),
                row("d", True, level="agent", agent="coder"),
                row("e", False, level="llm", model="claude", span_id="e" * 16),
                service="shop",
                detail=detail(("planner", "coder"), ("gpt-4o",), ("search", "calc")),
                variant="1.5",
            ),
            outcome(
                "2" * 32,
                row("a", False),
                row("b", True),
                service="bank",
                detail=detail(tools=("search",)),
                variant="1.4",
            ),
            outcome(
                "3" * 32,
                row("a", True),
                row("b", True),
                row("c", None, "sampled_out"),
                service="shop",
                detail=detail(("planner",), ("gpt-4o-mini",)),
            ),
        ]
    )


def found(reader: ReviewReader, **where: object) -> set[tuple[str, str, str]]:
    page = reader.results(ResultFilter(**where), 100)  # type: ignore[arg-type]
    assert page.next_cursor is None
    return {(item.trace_id[0], item.evaluator, item.outcome) for item in page.items}


def test_every_filter_selects_the_results_it_names(backend: Backend) -> None:
    store = backend.store()
    populate(store)
    reader = reader_of(store)
    everything = found(reader)
    assert everything == {
        ("1", "a", "pass"), ("1", "b", "fail"), ("1", "c", "skip"), ("1", "d", "pass"), ("1", "e", "fail"),
        ("2", "a", "fail"), ("2", "b", "pass"), ("3", "a", "pass"), ("3", "b", "pass"),
    }  # fmt: skip
    assert found(reader, evaluator="a") == {("1", "a", "pass"), ("2", "a", "fail"), ("3", "a", "pass")}
    assert found(reader, service="bank") == {("2", "a", "fail"), ("2", "b", "pass")}
    assert found(reader, outcome="fail") == {("1", "b", "fail"), ("1", "e", "fail"), ("2", "a", "fail")}
    assert found(reader, outcome="skip") == {("1", "c", "skip")}
    assert found(reader, outcome="pass") == {t for t in everything if t[2] == "pass"}
    assert found(reader, trace_id="3" * 32) == {("3", "a", "pass"), ("3", "b", "pass")}
    # agent and model: the result's own, else the trace's first; "" for none at all
    assert found(reader, agent="coder") == {("1", "d", "pass")}
    assert found(reader, agent="planner") == {t for t in everything if t[0] in "13" and t[1] != "d"}
    assert found(reader, agent="") == {("2", "a", "fail"), ("2", "b", "pass")}
    assert found(reader, model="claude") == {("1", "e", "fail")}
    assert found(reader, model="gpt-4o") == {("1", "a", "pass"), ("1", "b", "fail"), ("1", "c", "skip"),
                                             ("1", "d", "pass")}  # fmt: skip
    assert found(reader, model="gpt-4o-mini", outcome="pass", evaluator="b") == {("3", "b", "pass")}
    # variant: the trace's, failing and skipped results (rows) as well as passing ones (packed); "" for none
    assert found(reader, variant="1.5") == {t for t in everything if t[0] == "1"}
    assert found(reader, variant="1.4", outcome="pass") == {("2", "b", "pass")}
    assert found(reader, variant="") == {("3", "a", "pass"), ("3", "b", "pass")}
    assert found(reader, variant="1.5", service="bank") == set() and found(reader, variant="2.0") == set()
    assert {i.variant for i in reader.results(ResultFilter(variant="1.4"), 10).items} == {"1.4"}
    # time: since inclusive, until exclusive, on the evaluation time
    backend.execute("UPDATE traces SET created_at = 1000 WHERE trace_id = ?", ("1" * 32,))
    backend.execute("UPDATE results SET created_at = 1000 WHERE trace_id = ?", ("1" * 32,))
    assert {t[0] for t in found(reader, until=1000.5)} == {"1"}
    assert {t[0] for t in found(reader, since=1000.5)} == {"2", "3"}
    assert found(reader, since=1000, until=1000.0001, outcome="fail") == {("1", "b", "fail"), ("1", "e", "fail")}
    assert found(reader, since=2000, until=1500) == set()
    skip = reader.results(ResultFilter(outcome="skip"), 10).items[0]
    assert (skip.skip_reason, skip.score, skip.input_excerpt) == ("needs_ground_truth", None, "in")
    store.close()


def test_breakdowns_count_each_group_exactly(backend: Backend) -> None:
    store = backend.store()
    populate(store)
    reader = reader_of(store)

    def groups(by: str, **kwargs: object) -> list[tuple[str, int, int, int]]:
        breakdown = reader.breakdown(by, **kwargs)  # type: ignore[arg-type]
        assert breakdown.by == by
        return [(g.value, g.passed, g.failed, g.skipped) for g in breakdown.groups]

    assert groups("service") == [("shop", 4, 2, 1), ("bank", 1, 1, 0)]
    assert groups("agent") == [("planner", 3, 2, 1), ("", 1, 1, 0), ("coder", 1, 0, 0)]
    assert groups("model") == [("gpt-4o", 2, 1, 1), ("", 1, 1, 0), ("claude", 0, 1, 0), ("gpt-4o-mini", 2, 0, 0)]
    assert groups("tool") == [("search", 3, 3, 1), ("calc", 2, 2, 1)]  # a trace's results count for each tool
    assert groups("service", evaluator="a") == [("bank", 0, 1, 0), ("shop", 2, 0, 0)]
    assert groups("tool", evaluator="b") == [("search", 1, 1, 0), ("calc", 0, 1, 0)]
    assert groups("agent", evaluator="d") == [("coder", 1, 0, 0)]
    assert groups("variant") == [("1.5", 2, 2, 1), ("1.4", 1, 1, 0), ("", 2, 0, 0)]
    assert groups("variant", evaluator="a") == [("1.4", 0, 1, 0), ("", 1, 0, 0), ("1.5", 1, 0, 0)]
    assert groups("service", variant="1.5") == [("shop", 2, 2, 1)]  # one variant's results only
    assert groups("tool", variant="1.4") == [("search", 1, 1, 0)]
    assert groups("model", variant="", evaluator="b") == [("gpt-4o-mini", 1, 0, 0)]
    assert reader.breakdown("variant", variant="1.5").variant == "1.5"
    shop = reader.breakdown("service").groups[0]
    # calls: the models entries of its traces (written without costs, as before spend was stored: unpriced None)
    assert shop == BreakdownGroup(value="shop", passed=4, failed=2, skipped=1, pass_ratio=4 / 6, calls=2)
    backend.execute("UPDATE traces SET created_at = 1000 WHERE trace_id != ?", ("1" * 32,))
    backend.execute("UPDATE results SET created_at = 1000 WHERE trace_id != ?", ("1" * 32,))
    assert groups("service", until=1001) == [("bank", 1, 1, 0), ("shop", 2, 0, 0)]
    assert groups("service", since=1001) == [("shop", 2, 2, 1)]
    assert reader.breakdown("service", since=5000, until=5001).groups == []
    with pytest.raises(ValueError):
        reader.breakdown("colour")  # type: ignore[arg-type]
    store.close()


def test_pages_cover_every_result_once_newest_first_while_new_rows_arrive(backend: Backend) -> None:
    store = backend.store()
    store.write([outcome(f"{n:032x}", row("a", True), row("b", True), row("c", False), row("d", None, "error"),
                         row("e", True)) for n in range(30)])  # fmt: skip
    # ties everywhere: every row of the first 20 traces at one time
    backend.execute("UPDATE traces SET created_at = 1000 WHERE trace_id < ?", (f"{20:032x}",))
    backend.execute("UPDATE results SET created_at = 1000 WHERE trace_id < ?", (f"{20:032x}",))
    reader = reader_of(store)
    seen: list[tuple[str, str]] = []
    times: list[float] = []
    cursor = None
    pages = 0
    while True:
        page = reader.results(ResultFilter(), 7, cursor)
        seen += [(item.trace_id, item.evaluator) for item in page.items]
        times += [item.evaluated_at for item in page.items]
        pages += 1
        if pages == 2:  # newer rows arrive while paging: they are not in the pages already asked for
            store.write([outcome(f"{n:032x}", row("a", True), row("c", False)) for n in range(100, 105)])
        cursor = page.next_cursor
        if cursor is None:
            break
        assert len(page.items) == 7 and pages < 30  # a cursor that does not advance would page forever
    assert len(seen) == len(set(seen)) == 150 and pages == 22
    assert set(seen) == {(f"{n:032x}", e) for n in range(30) for e in "abcde"}
    assert times == sorted(times, reverse=True)
    fail_pages = [reader.results(ResultFilter(outcome="fail"), 4)]
    while fail_pages[-1].next_cursor and len(fail_pages) < 20:
        fail_pages.append(reader.results(ResultFilter(outcome="fail"), 4, fail_pages[-1].next_cursor))
    assert sum(len(p.items) for p in fail_pages) == 35  # 30 + the 5 that arrived


# empty, not base64, base64 of "not json", of [1,2,3], of ["a",1,1,1], of [1,7,1,1] (no such source)
@pytest.mark.parametrize(
    "cursor", ["", "not base64 ***", "bm90IGpzb24", "WzEsMiwzXQ", "WyJhIiwxLDEsMV0", "WzEsNywxLDFd"]
)
def test_a_cursor_the_store_did_not_issue_is_a_value_error(backend: Backend, cursor: str) -> None:
    store = backend.store()
    with pytest.raises(ValueError):
        reader_of(store).results(ResultFilter(), 10, cursor)
    store.close()


def test_the_cli_opens_a_store_file_read_only(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = ResultStore(path)
    populate(store)
    store.close()
    path.chmod(0o444)
    reader = SQLiteReviewReader.open(path)
    assert len(reader.results(ResultFilter(), 100).items) == 9
    with pytest.raises(sqlite3.OperationalError, match="readonly"), reader._connection() as db:
        db.execute("DELETE FROM results")
    reader.close()
    with pytest.raises(StoreUnavailable, match="no such file"):
        SQLiteReviewReader.open(tmp_path / "missing.db")
    (tmp_path / "other.db").write_bytes(b"")
    with pytest.raises(StoreUnavailable, match="not a result store"):
        SQLiteReviewReader.open(tmp_path / "other.db")
