"""Benchmark: LLM judges waiting on a slow judge API must not slow rule evaluation down.

Two runs of the daemon under the same OTLP/gRPC overload as bench_daemon.py (quiet_period 1 s, workers auto,
BENCH_JUDGE_SECONDS each, default 10): the default rule set alone, then the same rules plus three builtin
judges (hallucination, task_completion, safety) at sampling BENCH_JUDGE_SAMPLING (default 0.1, as an ops
team would run them) against a local fake Gemini server that
answers every request after BENCH_JUDGE_DELAY seconds (default 2). The judges can finish only a few
judgements a second; the rest wait (up to `judges.max_pending`) or are skipped. The figure: evaluated traces
per second with judges / without, target >= 0.9. Prints, does not assert.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_daemon import CORES, evaluated_per_second
from tests.bench.daemon_load import Broken, Run, run_daemon
from tests.support.fake_gemini import FakeAnswer, FakeGemini, FakeRequest, ok, slow
from tests.support.schema_reply import reply_for

SECONDS = float(os.environ.get("BENCH_JUDGE_SECONDS", "10"))
DELAY = float(os.environ.get("BENCH_JUDGE_DELAY", "2"))
QUIET = 1.0
TARGET = 0.9
SAMPLING = float(os.environ.get("BENCH_JUDGE_SAMPLING", "0.1"))
JUDGES = ("hallucination", "task_completion", "safety")


def slow_answer(request: FakeRequest) -> FakeAnswer:
    return slow(DELAY, ok(reply_for(request.generation_config["responseSchema"], number=1.0)))


def judge_overrides(base_url: str) -> dict[str, Any]:
    return {
        "evaluators": {"defaults": True, "add": [{"name": name, "sampling": SAMPLING} for name in JUDGES]},
        "judges": {"gemini_api_key": "bench-key", "base_url": base_url, "requests_per_minute": 0, "cache_size": 0},
    }


def run(name: str, overrides: dict[str, Any]) -> Run:
    print(f"  running: {name} ({SECONDS:g} s)", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-judges-") as tmp:
        return run_daemon(Path(tmp), overrides, SECONDS, QUIET)


def labelled_total(run: Run, name: str, **labels: str) -> float:
    return sum(v for found, v in run.metrics.get(name, []) if all(found.get(k) == w for k, w in labels.items()))


def main() -> int:
    print(
        f"rule evaluation with slow judges: {CORES} usable cores, {SECONDS:g} s per run, the fake judge API answers "
        f"after {DELAY:g} s; judges {', '.join(JUDGES)} at sampling {SAMPLING:g}",
        flush=True,
    )
    try:
        rules = run("rules only", {})
        with FakeGemini(slow_answer) as fake:
            judged = run("rules + slow judges", judge_overrides(fake.url))
            max_in_flight = fake.max_in_flight
    except Broken as exc:
        print(f"BROKEN: {exc}")
        return 1
    without, with_judges = evaluated_per_second(rules), evaluated_per_second(judged)
    ratio = with_judges / without if without else float("nan")
    scored = sum(labelled_total(judged, "agent_eval_results_total", evaluator=j, outcome=o)
                 for j in JUDGES for o in ("pass", "fail"))  # fmt: skip
    skipped = sum(labelled_total(judged, "agent_eval_skips_total", evaluator=j, reason="judge_unavailable")
                  for j in JUDGES)  # fmt: skip
    requests = labelled_total(judged, "agent_monitor_judge_requests_total", status="ok")
    print(f"  rules only            {without:8,.0f} evaluated traces/s")
    print(f"  rules + slow judges   {with_judges:8,.0f} evaluated traces/s")
    print(
        f"  judges: {requests:,.0f} requests answered, {scored:,.0f} judgements scored, {skipped:,.0f} skipped as "
        f"judge_unavailable (backlog full or shut down); at most {max_in_flight} requests in flight at the API"
    )
    verdict = "OK" if ratio >= TARGET else "MISSED"
    print(f"  with / without judges  {ratio:.2f}   target >= {TARGET}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
