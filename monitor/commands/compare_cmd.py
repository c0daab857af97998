"""`agent-monitor compare`: is a candidate version of an agent worse than the baseline? Both sets of saved traces
are evaluated as `agent-monitor evaluate` does, and each evaluator's pass rates and scores are compared with
the tests of `evaluators.sdk.significance`.

The two sets: `--baseline DIR --candidate DIR`, or one `--traces DIR` split by a root-span or resource
attribute (`--split-by service.version --baseline-value 1.4 --candidate-value 1.5`).

Exit status: 1 when a gated evaluator (`--gate`, default every evaluator) is significantly worse, 0 otherwise,
2 on bad input (missing paths, no traces, an unknown gate, a split that leaves a side empty, a bad spec).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from evaluators.sdk.significance import ProportionTest, RankTest, Verdict, mann_whitney, two_proportions, verdict
from evaluators.traces import TraceDecodeError, load_traces
from evaluators.traces.model import Trace
from monitor.engine.gc_tuning import tune_gc
from monitor.engine.variants import attribute_value
from monitor.offline.evaluation import EvaluatorReport, evaluate_offline
from monitor.offline.judges import stderr_progress
from monitor.offline.signatures import compare_groups, deltas_json, render_deltas
from monitor.offline.spec import (
    InputError,
    Selected,
    pricing_overrides,
    selection_and_judges,
    signature_rules,
)
from monitor.offline.spend import cost_ratio, ratio_line, spend_line
from monitor.text import clip

PROG = "agent-monitor compare"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare a candidate version's traces with a baseline's, evaluator by evaluator",
        description="Evaluate two sets of saved traces (--baseline and --candidate, or one --traces set split "
        "by --split-by ATTRIBUTE) and compare each evaluator's pass rate (two-proportion z-test, Newcombe "
        "interval) and scores (Mann-Whitney U), and what a trace costs on each side (mean, p50, p95, total; the "
        "candidate's mean cost per trace over the baseline's). Exit status 1 when a gated evaluator is "
        "significantly worse, 0 otherwise, 2 on bad input.",
    )
    parser.add_argument("--baseline", metavar="DIR", help="the baseline's trace files or directory")
    parser.add_argument("--candidate", metavar="DIR", help="the candidate's trace files or directory")
    parser.add_argument("--traces", metavar="DIR", help="one set of traces to split with --split-by")
    parser.add_argument(
        "--split-by", metavar="ATTRIBUTE", help="root-span or resource attribute telling the versions apart"
    )
    parser.add_argument("--baseline-value", metavar="A", help="the --split-by value of the baseline's traces")
    parser.add_argument("--candidate-value", metavar="B", help="the --split-by value of the candidate's traces")
    parser.add_argument(
        "--evaluators", dest="spec", metavar="SPEC", help="YAML evaluator spec (default: every rule-based builtin)"
    )
    parser.add_argument("--alpha", type=_alpha, default=0.05, help="significance level (default 0.05)")
    parser.add_argument(
        "--min-samples",
        type=_count,
        default=30,
        metavar="N",
        help="scored results each side needs before a verdict (default 30)",
    )
    parser.add_argument(
        "--gate",
        action="append",
        metavar="NAME",
        help="evaluator whose regression fails the run (repeatable; default: every evaluator)",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    parser.set_defaults(handler=run)


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class Comparison:
    """One evaluator on both sides, with its tests and verdict."""

    label: str
    baseline: EvaluatorReport
    candidate: EvaluatorReport
    proportions: ProportionTest
    ranks: RankTest | None
    verdict: Verdict
    gated: bool

    @property
    def no_data(self) -> bool:
        """No pass/fail verdict on a side (an evaluator that skipped every trace there): nothing was tested."""
        return self.proportions.base_total == 0 or self.proportions.cand_total == 0

    @property
    def reason(self) -> str:
        """The verdict's reason; `no_data` when a side has no verdicts (rather than a test of nothing)."""
        return "no_data" if self.no_data else self.verdict.reason

    def to_dict(self) -> dict[str, Any]:
        t = self.proportions
        untested = self.no_data
        return {
            "evaluator": self.label,
            "baseline": {"passed": t.base_passed, "total": t.base_total, "pass_rate": _finite(t.base_rate)},
            "candidate": {"passed": t.cand_passed, "total": t.cand_total, "pass_rate": _finite(t.cand_rate)},
            "delta": _finite(t.delta),
            "ci": [_finite(t.ci_low), _finite(t.ci_high)],
            "p_value": None if untested else t.p_value,
            "z": None if untested else t.z,
            "scores_p_value": self.ranks.p_value if self.ranks is not None else None,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "gated": self.gated,
        }


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


class _Usage(Exception):
    """Bad input: printed, exit status 2."""


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        prices = pricing_overrides(args.spec)
        selection, judges = selection_and_judges(args.spec, prices)
        rules = signature_rules(args.spec)
        gates = _gates(args.gate, selection)
        (base_name, base_traces), (cand_name, cand_traces) = _trace_sets(args)
    except (InputError, TraceDecodeError, _Usage) as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    except ValidationError as exc:
        print(f"{PROG}: {args.spec}: invalid judges section: {exc}", file=err)
        return 2
    tune_gc()
    progress = stderr_progress(err)
    base, cand = (
        evaluate_offline(
            traces, selection, worst=0, judges=judges, progress=progress, signature_rules=rules, prices=prices
        )
        for traces in (base_traces, cand_traces)
    )
    comparisons = compare_reports(base.evaluators, cand.evaluators, args.alpha, args.min_samples, gates)
    deltas = compare_groups(base.signatures, cand.signatures, base.trace_count, cand.trace_count)
    if args.format == "json":
        data = {
            "alpha": args.alpha,
            "min_samples": args.min_samples,
            "baseline": {"source": base_name, "traces": base.trace_count, "spend": base.spend.to_dict()},
            "candidate": {"source": cand_name, "traces": cand.trace_count, "spend": cand.spend.to_dict()},
            "cost_ratio": cost_ratio(base.spend, cand.spend),  # candidate's mean cost per trace / baseline's
            "evaluators": [c.to_dict() for c in comparisons],
            **deltas_json(deltas),
        }
        json.dump(data, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        header = f"baseline {base_name}: {base.trace_count} traces; candidate {cand_name}: {cand.trace_count} traces"
        table = render_table(comparisons, header, args.alpha, args.min_samples)
        spend = [
            "",
            f"baseline {spend_line(base.spend)}",
            f"candidate {spend_line(cand.spend)}",
            ratio_line(base.spend, cand.spend),
        ]
        out.write(table + "".join(f"{line}\n" for line in [*render_deltas(deltas), *spend]))
    return exit_code(comparisons)


def _gates(names: Sequence[str] | None, selection: Sequence[Selected]) -> set[str]:
    labels = [s.label for s in selection]
    if not names:
        return set(labels)
    unknown = [n for n in names if n not in labels]
    if unknown:
        raise _Usage(f"--gate {', '.join(unknown)}: no such evaluator in the selection ({', '.join(labels)})")
    return set(names)


def _trace_sets(args: argparse.Namespace) -> tuple[tuple[str, list[Trace]], tuple[str, list[Trace]]]:
    """(name, traces) of the baseline and the candidate, from two paths or one split set."""
    split = (args.traces, args.split_by, args.baseline_value, args.candidate_value)
    if args.baseline is not None or args.candidate is not None:
        if args.baseline is None or args.candidate is None or any(v is not None for v in split):
            raise _Usage("give --baseline and --candidate together, or --traces with --split-by (not both)")
        return (args.baseline, _load(args.baseline)), (args.candidate, _load(args.candidate))
    if any(v is None for v in split):
        raise _Usage(
            "give --baseline DIR --candidate DIR, or --traces DIR --split-by ATTRIBUTE "
            "--baseline-value A --candidate-value B"
        )
    traces = _load(args.traces)
    found = Counter(attribute_value(t, args.split_by) for t in traces)
    sides = []
    for value in (args.baseline_value, args.candidate_value):
        chosen = [t for t in traces if attribute_value(t, args.split_by) == value]
        if not chosen:
            seen = ", ".join(f"{v!r} ({n})" for v, n in found.most_common(10) if v is not None) or "none"
            raise _Usage(f"no trace in {args.traces} has {args.split_by}={value!r}; values found: {seen}")
        sides.append((f"{args.split_by}={value}", chosen))
    if args.baseline_value == args.candidate_value:
        raise _Usage("--baseline-value and --candidate-value are the same")
    return sides[0], sides[1]


def _load(path: str) -> list[Trace]:
    if not Path(path).exists():
        raise _Usage(f"{path}: no such file or directory")
    traces = load_traces(path)
    if not traces:
        raise _Usage(f"no spans found in {path}")
    return traces


def compare_reports(
    baseline: Sequence[EvaluatorReport],
    candidate: Sequence[EvaluatorReport],
    alpha: float,
    min_samples: int,
    gates: set[str],
) -> list[Comparison]:
    """One Comparison per evaluator present on both sides, in the baseline's order."""
    by_label = {e.label: e for e in candidate}
    comparisons = []
    for base in baseline:
        cand = by_label.get(base.label)
        if cand is None:
            continue
        b, c = base.summary, cand.summary
        test = two_proportions(b.passed, b.passed + b.failed, c.passed, c.passed + c.failed, alpha)
        ranks = mann_whitney(base.scores, cand.scores) if base.scores and cand.scores else None
        comparisons.append(
            Comparison(
                base.label, base, cand, test, ranks, verdict(test, ranks, alpha, min_samples), base.label in gates
            )
        )
    return comparisons


def exit_code(comparisons: Sequence[Comparison]) -> int:
    """1 when a gated evaluator is significantly worse, else 0."""
    return 1 if any(c.gated and c.verdict.value == -1 for c in comparisons) else 0


def _rate(rate: float, total: int) -> str:
    return "- (n=0)" if math.isnan(rate) else f"{rate:.3f} (n={total})"


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"


def _signed(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:+.3f}"


def render_table(comparisons: Sequence[Comparison], header: str, alpha: float, min_samples: int) -> str:
    """One row per evaluator, then the regressions that fail the run."""
    level = f"{100 * (1 - alpha):g}% CI"
    rows = [["evaluator", "baseline", "candidate", "delta", level, "p", "scores p", "verdict"]]
    for c in comparisons:
        t = c.proportions
        ci = "-" if math.isnan(t.ci_low) else f"[{t.ci_low:+.3f}, {t.ci_high:+.3f}]"
        rows.append(
            [
                clip(c.label, 32),
                _rate(t.base_rate, t.base_total),
                _rate(t.cand_rate, t.cand_total),
                _signed(t.delta),
                ci,
                "-" if c.no_data else _p(t.p_value),
                "-" if c.ranks is None else _p(c.ranks.p_value),
                f"{c.reason.replace('_', ' ') if c.no_data else c.reason}{'' if c.gated else ' (not gated)'}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [header, f"alpha {alpha:g}, at least {min_samples} scored results a side for a verdict", ""]
    for row in rows:
        cells = [cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    lines.append("")
    worse = [c for c in comparisons if c.gated and c.verdict.value == -1]
    for c in worse:
        lines.append(
            f"WORSE {clip(c.label, 32)}: pass rate {_signed(c.proportions.delta)} (p={c.proportions.p_value:.2g})"
        )
    if not worse:
        lines.append("OK: no gated evaluator is significantly worse")
    return "\n".join(lines) + "\n"
