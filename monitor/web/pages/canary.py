"""GET /review/canary: the live variant comparisons (variants.compare), each a row with both sides' pass ratios,
the delta and its interval, the p-values and the verdict, and links to the failing results behind them: the
candidate's, the baseline's, both broken down by variant, and the pairs the candidate lost."""

from __future__ import annotations

import math
from collections.abc import Sequence

import monitor.web.pages.fmt as fmt
from monitor.review.models import VariantComparison, VariantSide
from monitor.web.html import Html, el, join
from monitor.web.pages.breakdown import PAGE as BREAKDOWN
from monitor.web.pages.layout import RESULTS, ROOT, ReviewSite, link, shell

PAGE = f"{ROOT}/canary"
VERDICTS = {
    "worse": ("worse", "badge fail"),
    "better": ("better", "badge pass"),
    "no_significant_difference": ("no significant difference", "badge skip"),
    "insufficient_samples": ("too few results", "badge skip"),
}


def _signed(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value * 100:+.1f} pts"


def _p(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return "< 0.0001" if value < 0.0001 else f"{value:.4f}"


def _side(side: VariantSide) -> Html:
    return el("td", el("code", side.variant), el("br"), f"{fmt.ratio(side.pass_ratio)} of {side.total}")


def _window(seconds: float) -> str:
    return fmt.duration_ms(seconds * 1000)


def _since(window: float) -> str:
    return f"{max(1, math.ceil(window))}s"


def _links(c: VariantComparison) -> Html:
    since = _since(c.window)
    failures = {"evaluator": c.evaluator, "outcome": "fail", "since": since}
    items: list[Html] = [
        el("a", "candidate's failures", href=link(RESULTS, {**failures, "variant": c.candidate.variant})),
        el("a", "baseline's failures", href=link(RESULTS, {**failures, "variant": c.baseline.variant})),
        el("a", "by variant", href=link(BREAKDOWN, {"evaluator": c.evaluator, "by": "variant", "since": since})),
    ]
    for pairs in c.pairwise:
        lost = {"evaluator": pairs.evaluator, "variant": c.candidate.variant, "outcome": "fail"}
        items.append(el("a", f"pairs lost ({pairs.evaluator})", href=link(RESULTS, lost)))
    return el("td", join(*items, sep=el("br")))


def _verdict(c: VariantComparison) -> Html:
    text, badge = VERDICTS[c.reason]
    cell: list[Html | str] = [el("span", text, class_=badge)]
    if c.reason == "insufficient_samples":
        cell.append(el("span", f" need {c.min_samples} a side", class_="muted"))
    return el("td", cell)


def _pairwise(c: VariantComparison) -> Html:
    if not c.pairwise:
        return el("td", "–", class_="muted")
    return el("td", join(*[f"{p.win} won · {p.tie} tied · {p.loss} lost" for p in c.pairwise], sep=el("br")))


def comparison_row(c: VariantComparison) -> Html:
    interval = f"[{_signed(c.delta_lower)}, {_signed(c.delta_upper)}]"
    cells = [
        el(
            "td",
            el("strong", c.evaluator),
            el("br"),
            el("span", f"over {fmt.duration_ms(c.window * 1000)}", class_="muted"),
        ),
        _side(c.baseline),
        _side(c.candidate),
        el("td", _signed(c.delta), el("br"), el("span", interval, class_="muted"), class_="num"),
        el("td", f"pass rate {_p(c.p_value_pass_rate)}", el("br"), f"scores {_p(c.p_value_scores)}", class_="nowrap"),
        _verdict(c),
        _pairwise(c),
        _links(c),
    ]
    return el("tr", cells, class_="row-fail" if c.verdict == -1 else None)


def canary_page(site: ReviewSite, comparisons: Sequence[VariantComparison], modes: Sequence[Html] = ()) -> Html:
    """The comparisons' table, then `modes`: each candidate's new failure modes (failures.candidate_section)."""
    title = "Canary: candidates against their baselines"
    if not comparisons:
        body: Html = el("p", "No comparison configured: add variants.compare entries to the config.", class_="muted")
        return shell(site, "canary", [el("h1", title), body], active="canary")
    alpha = ", ".join(sorted({f"{c.alpha:g}" for c in comparisons}))
    head = ("evaluator", "baseline", "candidate", "delta, interval", "p-values", "verdict", "pairwise", "failing")
    table = el(
        "table",
        el("thead", el("tr", [el("th", h) for h in head])),
        el("tbody", [comparison_row(c) for c in comparisons]),
        class_="canary",
    )
    note = el(
        "p",
        f"Live, over each comparison's window; significance level {alpha}. The delta is the candidate's pass "
        "ratio minus the baseline's; the interval is its confidence interval.",
        class_="muted",
    )
    return shell(site, "canary", [el("h1", title), note, table, *modes], active="canary")
