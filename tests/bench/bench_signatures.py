"""What failure signatures add to the per-trace evaluation (issue 25's bar: at most 5%), measured alone.

The evaluation baseline's traces (evaluation_baseline.py: the default evaluators over the load generator's
7-span traces), a share of them with their search_flights tool failing with a message that varies per trace (a
request id, a timestamp): CPU time per trace of the evaluation and of the store's write (SQLite file), and what
the signatures add to them: the Signer on every result, and the store's write of the same outcomes with their
signatures (sightings, `results.signature`, the upsert). Best of REPEATS; CPU time, not wall time, because the
benches share the host.

    python tests/bench/bench_signatures.py [failing share, default 0 0.1 0.5 1]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `python tests/bench/bench_signatures.py` (make bench)

from evaluators.sdk import EvalResult
from monitor.config import MonitorConfig
from monitor.engine.assembler import CompletedTrace
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.signing import Signer
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.outcomes import ResultRow, TraceOutcome
from monitor.store.sqlite import ResultStore
from tests.bench.evaluation_baseline import bench_traces

REPEATS = 15


class NoSigner(Signer):
    """No signatures: the evaluation as it was before them."""

    def __call__(self, *args: object, **kwargs: object) -> None:
        return None


def failing_traces(share: float) -> list[CompletedTrace]:
    traces = bench_traces()
    for n, completed in enumerate(traces):
        if n % 100 < share * 100:
            for record in completed.spans:
                if "search_flights" in record.name:
                    record.status_code = 2
                    record.status_message = (
                        f"HTTP 503 from flights-api for request {n:08x} at 2026-11-26T17:{n % 60:02d}Z"
                    )
    return traces


def best(work: Callable[[], object], repeats: int = REPEATS) -> float:
    fastest = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        work()
        fastest = min(fastest, time.process_time() - started)
    return fastest


def measure(share: float) -> str:
    built, problems = build_evaluators(MonitorConfig().evaluator_entries())
    assert not problems, problems
    plain = TraceEvaluator(built, store_results="all", signer=NoSigner())
    evaluation = best(lambda: plain.evaluate_batch(failing_traces(share)))
    outcomes = [o for o in plain.evaluate_batch(failing_traces(share)) if isinstance(o, TraceOutcome)]
    signer = Signer()
    results = [(r, EvalResult(r.score, r.passed, r.explanation or "")) for o in outcomes for r in o.results
               if r.passed is not None]  # fmt: skip

    def sign() -> None:
        signer._known.clear()  # each trace's failure is another message: nothing remembered from the last run
        for row, result in results:
            signer(row.evaluator, row.level, row.agent, result)

    signing = best(sign)

    def signed(row: ResultRow) -> ResultRow:
        if row.passed is None:
            return row
        result = EvalResult(row.score, row.passed, row.explanation or "")
        return row._replace(signature=signer(row.evaluator, row.level, row.agent, result))

    with_signatures = [o._replace(results=tuple(signed(r) for r in o.results)) for o in outcomes]
    directory = Path(tempfile.mkdtemp())

    def writing(written: list[TraceOutcome], name: str) -> float:
        store = ResultStore(directory / name)
        try:
            return best(lambda: store.write(written), 10)
        finally:
            store.close()

    write_plain, write_signed = writing(outcomes, "plain.db"), writing(with_signatures, "signed.db")
    n = len(outcomes)
    added = signing + write_signed - write_plain
    return (
        f"failing share {share:.0%}: evaluation {evaluation / n * 1e6:.0f} us/trace, store write "
        f"{write_plain / n * 1e6:.0f} us/trace; signatures add {signing / n * 1e6:.1f} (signer) + "
        f"{(write_signed - write_plain) / n * 1e6:.1f} (store) us/trace = {added / (evaluation + write_plain):.1%}"
    )


if __name__ == "__main__":
    for share in [float(a) for a in sys.argv[1:]] or [0.0, 0.1, 0.5, 1.0]:
        print(measure(share), flush=True)
