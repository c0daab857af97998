"""Reviewers' agreement with an evaluator and the calibration of its threshold, on a scripted set of reviewed
results in a real store (SQLite and PostgreSQL): the figures (monitor/review/agreement.py), their Wilson
intervals, the calibration table and its suggestion (monitor/review/calibration.py) and `agent-monitor calibrate`
equal what the test recomputes on its own from the script (counted by hand, the interval by the textbook form)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
import yaml

from monitor.cli import build_parser
from monitor.outcomes import ResultRow
from monitor.review.agreement import agreement_by_evaluator
from monitor.review.calibration import calibrate
from monitor.store.reviews import ResultKey, ReviewInput, StoredReview, write_review
from monitor.store.writer import QueuedResultStore
from tests.support.backends import Backend
from tests.support.store_builders import outcome

THRESHOLD = 0.5  # the configured threshold of `faithful`: a result passes at score >= 0.5
Z95 = 1.959963984540054  # the 97.5% point of the standard normal

# (score, should fail in the reviewer's eyes, corrected score): reviewers fail what scores below 0.6 (so 0.6 is the
# threshold that matches them), except the noise at 0.9, corrected down to 0.3.
SCORES = (0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9)
CORRECTED = {(0, 0.55): 0.2, (1, 0.9): 0.3}  # (copy, score) -> a corrected score given with the review


def trace_id(copy: int, index: int) -> str:
    return f"{copy:02x}{index:02x}".ljust(32, "0")


def result(evaluator: str, score: float | None, skip: str | None = None) -> ResultRow:
    passed = None if score is None else score >= THRESHOLD
    return ResultRow(None, None, None, evaluator, "trace", score, passed, skip, "why", None, 0.001)


def script(store: QueuedResultStore) -> list[ReviewInput]:
    """Store the results and write their reviews (one superseded); the reviews in force, as given."""
    given: list[ReviewInput] = []
    now = 1000.0
    for copy in (0, 1):
        for index, score in enumerate(SCORES):
            tid = trace_id(copy, index)
            rows = [result("faithful", score)]
            if index < 4:  # `polite` on a few traces: its own figures
                rows.append(result("polite", 1.0 if index % 2 else 0.0))
            if index == 4:
                rows.append(result("faithful_skip", None, skip="no_output"))
            store.write([outcome(tid, *rows)])
    store.flush()
    for copy in (0, 1):
        for index, score in enumerate(SCORES):
            tid = trace_id(copy, index)
            corrected = CORRECTED.get((copy, score))
            should_fail = corrected < THRESHOLD if corrected is not None else score < 0.6
            failed = score < THRESHOLD
            agreement = "agree" if failed == should_fail else "disagree"
            review = ReviewInput(ResultKey(tid, "faithful", "trace"), agreement, "ann", corrected_score=corrected)
            if copy == 0 and index == 0:  # first the opposite, then changed: only the change is in force
                opposite = "disagree" if agreement == "agree" else "agree"
                first = review._replace(agreement=opposite)
                store.transaction(lambda db, r=first, t=now: write_review(db, r, t))  # type: ignore[misc]
                now += 1
            store.transaction(lambda db, r=review, t=now: write_review(db, r, t))  # type: ignore[misc]
            given.append(review)
            now += 1
            if index < 4 and copy == 0:
                polite = ReviewInput(ResultKey(tid, "polite", "trace"), "agree" if index < 3 else "disagree", "bob")
                store.transaction(lambda db, r=polite, t=now: write_review(db, r, t))  # type: ignore[misc]
                given.append(polite)
                now += 1
            if index == 4 and copy == 0:
                skip = ReviewInput(ResultKey(tid, "faithful_skip", "trace"), "agree", "bob")
                store.transaction(lambda db, r=skip, t=now: write_review(db, r, t))  # type: ignore[misc]
                given.append(skip)
                now += 1
    return given


def in_force(backend: Backend) -> list[StoredReview]:
    reader = backend.reader()
    try:
        return reader.reviews_in_force()  # type: ignore[attr-defined]
    finally:
        reader.close()


def wilson(k: int, n: int) -> tuple[float, float]:
    """The textbook form: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    denominator = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denominator
    return centre - half, centre + half


def expected_shares(given: list[ReviewInput], passed_of: dict[tuple[str, str], bool | None]) -> dict:
    """evaluator -> ((confirmed, reviewed) of failures, of passes, skips), counted from the script."""
    found: dict[str, list[int]] = {}
    for review in given:
        tally = found.setdefault(review.key.evaluator, [0, 0, 0, 0, 0])
        passed = passed_of[review.key.trace_id, review.key.evaluator]
        if passed is None:
            tally[4] += 1
            continue
        offset = 2 if passed else 0
        tally[offset + 1] += 1
        tally[offset] += review.agreement == "agree"
    return {name: ((t[0], t[1]), (t[2], t[3]), t[4]) for name, t in found.items()}


def test_agreement_figures_and_intervals_equal_the_counts_of_the_script(backend: Backend) -> None:
    store = backend.store(results="all")
    given = script(store)
    store.close()
    passed_of = {(r.trace_id, r.evaluator): r.verdict_passed for r in in_force(backend)}
    figures = agreement_by_evaluator(in_force(backend))
    expected = expected_shares(given, passed_of)
    assert set(figures) == {"faithful", "polite", "faithful_skip"} == set(expected)
    for name, ((fail_ok, fails), (pass_ok, passes), skips) in expected.items():
        got = figures[name]
        assert got.reviews == fails + passes + skips and got.skips_reviewed == skips, name
        for share, (k, n) in ((got.alarm_precision, (fail_ok, fails)), (got.pass_confirmation, (pass_ok, passes))):
            assert (share.confirmed, share.reviewed) == (k, n), name
            if n == 0:
                assert (share.ratio, share.lower, share.upper) == (None, None, None)
                continue
            lower, upper = wilson(k, n)
            assert share.ratio == pytest.approx(k / n)
            assert (share.lower, share.upper) == (pytest.approx(lower, abs=1e-12), pytest.approx(upper, abs=1e-12))
    # spelled out for `faithful`: its 10 failures (below 0.5) all confirmed; of its 14 passes, reviewers fail the
    # two 0.5s, the two 0.55s and one 0.9 (corrected to 0.3)
    faithful = figures["faithful"]
    assert (faithful.alarm_precision.confirmed, faithful.alarm_precision.reviewed) == (10, 10)
    assert (faithful.pass_confirmation.confirmed, faithful.pass_confirmation.reviewed) == (9, 14)
    assert faithful.pass_confirmation.lower == pytest.approx(0.3876, abs=1e-4)  # 9/14: Wilson 0.388-0.837
    assert faithful.pass_confirmation.upper == pytest.approx(0.8366, abs=1e-4)
    assert figures["faithful_skip"].skips_reviewed == 1 and figures["faithful_skip"].alarm_precision.ratio is None


def table_by_hand(reviews: list[StoredReview], configured: float) -> dict[float, tuple]:
    """threshold -> (agreement, precision, recall, tp, fp, fn, tn), over the scored reviews."""
    items = []
    for r in reviews:
        if r.verdict_passed is None or r.verdict_score is None:
            continue
        if r.corrected_score is not None:
            truth = r.corrected_score < configured
        elif r.agreement == "agree":
            truth = not r.verdict_passed
        else:
            truth = bool(r.verdict_passed)
        items.append((r.verdict_score, truth))
    table = {}
    for t in sorted({s for s, _ in items} | {configured}):
        tp = fp = fn = tn = 0
        for score, fail in items:
            if score < t:
                tp, fp = (tp + 1, fp) if fail else (tp, fp + 1)
            else:
                fn, tn = (fn + 1, tn) if fail else (fn, tn + 1)
        precision = tp / (tp + fp) if tp + fp else None
        recall = tp / (tp + fn) if tp + fn else None
        table[t] = ((tp + tn) / len(items), precision, recall, tp, fp, fn, tn)
    return table


def test_the_calibration_table_and_suggestion_equal_the_recount(backend: Backend) -> None:
    store = backend.store(results="all")
    script(store)
    store.close()
    reviews = [r for r in in_force(backend) if r.evaluator == "faithful"]
    result = calibrate("faithful", reviews, THRESHOLD, min_reviews=20)
    by_hand = table_by_hand(reviews, THRESHOLD)
    got = {r.threshold: (r.agreement, r.precision, r.recall, r.tp, r.fp, r.fn, r.tn) for r in result.rows}
    assert got.keys() == by_hand.keys() == {*SCORES}
    for t, row in by_hand.items():
        assert got[t] == pytest.approx(row), t
    assert [r.threshold for r in result.rows if r.configured] == [THRESHOLD]
    assert result.reviews == 24 and result.suggested is not None
    assert (result.suggested.threshold, result.suggested.agreement) == (0.6, pytest.approx(23 / 24))
    assert got[THRESHOLD][0] == pytest.approx(19 / 24)  # 0.5 and 0.55 passed, reviewers fail them; the 0.9 noise
    assert "0.6" in result.note and "24 reviews" in result.note

    refused = calibrate("faithful", reviews, THRESHOLD, min_reviews=25)
    assert refused.suggested is None and "fewer than the minimum 25" in refused.note
    assert refused.rows == result.rows


def test_ties_go_to_the_configured_threshold() -> None:
    def review(i: int, score: float, agreement: str) -> StoredReview:
        return StoredReview(f"r{i}", trace_id(0, i), "e", "trace", "", None, None, score >= 0.5, score, None,
                            agreement, None, None, None, "ann", float(i), None, None)  # type: ignore[arg-type]  # fmt: skip

    # a failure at 0.2 and a pass at 0.6, both confirmed: 0.5 (configured) and 0.6 decide both as reviewers do
    reviews = [review(0, 0.2, "agree"), review(1, 0.6, "agree")]
    result = calibrate("e", reviews, 0.5, min_reviews=1)
    assert [(r.threshold, r.agreement) for r in result.rows] == [(0.2, 0.5), (0.5, 1.0), (0.6, 1.0)]
    assert result.suggested is not None and result.suggested.threshold == 0.5
    assert result.note.startswith("the configured threshold 0.5 matches reviewers best: agreement 100.0% on 2")


def run_cli(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["calibrate", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = args.handler(args, out, err)
    return code, out.getvalue(), err.getvalue()


def config_file(tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    entries = [{"name": "error_free", "id": "faithful", "threshold": THRESHOLD}, {"name": "error_free"}]
    path.write_text(yaml.safe_dump({"evaluators": entries}))
    return str(path)


def test_the_calibrate_command_prints_the_table_and_the_json(backend: Backend, tmp_path: Path) -> None:
    store = backend.store(results="all")
    script(store)
    store.close()
    config = config_file(tmp_path)
    since = ("--since", "0")  # the scripted reviews are dated 1970
    code, out, err = run_cli("--evaluator", "faithful", "--store", backend.location, "--config", config, *since)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("faithful: 24 scored reviews since 1970-01-01 00:00 UTC, configured threshold 0.5")
    assert lines[1].split() == ["threshold", "agreement", "precision", "recall", "fails", "tp", "fp", "fn", "tn"]
    rows = {line.split()[0]: line.split() for line in lines[2:14]}
    assert rows["0.5*"][1:] == ["79.2%", "100.0%", "66.7%", "10", "10", "0", "5", "9"]
    assert rows["0.6<"][1] == "95.8%"
    assert lines[-1].startswith("suggested threshold 0.6 matches reviewers best: agreement 95.8% on 24 reviews")

    code, out, _ = run_cli("--evaluator", "faithful", "--store", backend.location, "--config", config, "--json", *since)
    document = json.loads(out)
    assert code == 0 and document["suggested"]["threshold"] == 0.6 and document["reviews"] == 24
    assert len(document["rows"]) == 12 and document["configured_threshold"] == 0.5

    code, out, _ = run_cli("--evaluator", "faithful", "--store", backend.location, "--config", config,
                           "--min-reviews", "30", *since)  # fmt: skip
    assert code == 0 and "no suggestion: 24 scored reviews, fewer than the minimum 30" in out and "<" not in out
    code, out, _ = run_cli("--evaluator", "faithful", "--store", backend.location, "--config", config)
    assert code == 0 and "0 scored reviews" in out and "no scored review" in out  # none in the last 30 days


def test_the_calibrate_command_refuses_an_unknown_or_unscored_evaluator(tmp_path: Path) -> None:
    config = config_file(tmp_path)
    code, _, err = run_cli("--evaluator", "nope", "--store", str(tmp_path / "r.db"), "--config", config)
    assert code == 2 and "no configured evaluator 'nope' (configured: error_free, faithful)" in err
    code, _, err = run_cli("--evaluator", "faithful", "--store", str(tmp_path / "missing.db"), "--config", config)
    assert code == 1 and "missing.db" in err
