"""Offline `agent-monitor evaluate` against amp-evaluation on the same traces and rule evaluators (issue 44:
evaluate ≥ 2× amp-evaluation, whole process and in process).

amp-evaluation is WSO2's trace-based evaluation framework (Apache-2.0, libs/amp-evaluation of
github.com/wso2/ai-agent-management-platform). It is not on the package index: the bench takes its source from
AMP_EVALUATION_SRC (the folder of its pyproject.toml), else from AMP_EVALUATION_GIT (a clone of that repository,
or a bare mirror of it: libs/amp-evaluation at its HEAD, extracted into .cache/amp-evaluation-src), else prints
why it skips and exits 0. It installs it into a virtualenv of its own,
.cache/amp-venv (reused while it imports), and runs it there with tests/bench/amp_runner.py.

The traces are bench_offline's: TRACES synthetic 7-span agent traces (agent, retrieval, 3 LLM calls, 2 tool
calls) in files of PER_FILE, protobuf and OTLP-JSON in turn; amp reads the same traces rewritten in its input
format, its trace service's export JSON (tests/bench/amp_traces.py), one file per OTLP file.

The evaluators, configured alike (ours | amp's | how they differ):
- latency | latency_performance: trace duration within 30 s, linear decay above; the same work.
- token_budget | token_efficiency: the trace's LLM tokens within 10,000; the same work.
- llm_call_budget | iteration_efficiency: the agent's LLM calls within 10; the same (both per agent).
- tool_success_rate | step_success_rate: share of the agent's tool steps without error, threshold 0.8; amp
  counts the retrieval as a tool step too (3 steps here, ours 2).
- response_length | length_compliance: text length within [1, 10,000]; ours per LLM call (the 2 tool-call-only
  calls skip, the answer is measured), amp the trace's final output once.
- prohibited_content | content_safety: the same PROHIBITED strings and regexes, case-insensitive; ours on each
  LLM call's text (the 2 tool-call-only calls skip), amp on the trace's final output.
No exact equivalent: our error_free, non_empty_response, finish_reason, hallucinated_tool, loop_detection,
tool_arguments_valid, pii_leak, secret_leak, refusal, response_language, cost_budget, agent_efficiency and the
session rules have no amp rule built-in; amp's content_coverage (required strings), tool_coverage (required
tools) and sequence_adherence (tool order) have none of ours in monitor mode (our tool_trajectory needs ground
truth). Those run only in the second comparison, `defaults`: each side's whole rule set, ours the default
selection of `evaluate` (no spec: 24 rules plus the ground-truth ones, which skip), amp's every rule built-in
that runs in monitor mode (9, the three above configured so that they score).

Figures, best of REPEATS, the runs taking turns so that the host's drift falls on all alike:
- whole process: wall time of `agent-monitor evaluate FOLDER --format json --workers 1` (as bench_offline runs
  it) against that of amp_runner.py, which loads the files with amp's TraceLoader, parses them into its Trace
  objects and runs one Monitor over them, printing its summary.
- in process: the evaluation alone, once each side's traces are decoded into its own trace model in memory:
  ours `evaluate_offline` (what the command runs after `load_traces`, with its GC tuning: every evaluator, the
  report's summaries, signatures and spend), amp's `Monitor.run(traces=...)` (every evaluator, the
  aggregation), each in a fresh process on freshly loaded traces (amp's is timed within its whole-process run).
The ratios are evaluate ÷ amp as speeds: above 1, evaluate is faster.

What leans which way: amp's input has been digested by its trace service already (messages, tool calls, tokens
pulled out of the attributes), where `evaluate` decodes raw OTLP; its export's raw `attributes` are left out here
(with them amp read 43 MB instead of 23, 0.1 s more of 2.8). Every trace passes every rule, so neither side's
failure path (explanations, failure details) is timed, as in bench_offline.

    python -m tests.bench.bench_amp            # BENCH_AMP_TRACES for another count
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.amp_traces import write_amp_files  # noqa: E402
from tests.bench.bench_offline import PER_FILE, SCRIPT  # noqa: E402
from tests.bench.bench_offline import TRACES as OFFLINE_TRACES  # noqa: E402
from tests.bench.trace_files import write_trace_files  # noqa: E402

TRACES = int(os.environ.get("BENCH_AMP_TRACES", str(OFFLINE_TRACES)))  # bench_offline's traces, its files
REPEATS = 3
RUNNER = Path(__file__).with_name("amp_runner.py")
CACHE = ROOT / ".cache"
SOURCE_CACHE = CACHE / "amp-evaluation-src"
VENV = CACHE / "amp-venv"
GIT = os.environ.get("AMP_EVALUATION_GIT", "")  # a clone or a bare mirror of amp's repository, when given
MIRROR = Path(GIT).expanduser() if GIT else None
MIRROR_PATH = "libs/amp-evaluation"
CLONE = "git clone https://github.com/wso2/ai-agent-management-platform"
HOW = f"ai-agent-management-platform/{MIRROR_PATH}"  # the folder AMP_EVALUATION_SRC names after CLONE

PROHIBITED = {"strings": ["as an ai language model", "password"], "patterns": [r"\b\d{3}-\d{2}-\d{4}\b", r"sk-\w{20,}"]}
# (our builtin, its params, amp's built-in, its params): the matched rule evaluators, configured alike
PAIRS: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("latency", {"max_latency_ms": 30000}, "latency_performance", {"max_latency_ms": 30000}),
    ("token_budget", {"max_tokens": 10000}, "token_efficiency", {"max_tokens": 10000}),
    ("llm_call_budget", {"max_llm_calls": 10}, "iteration_efficiency", {"max_iterations": 10}),
    ("tool_success_rate", {}, "step_success_rate", {"min_success_rate": 0.8}),
    (
        "response_length",
        {"min_chars": 1, "max_chars": 10000},
        "length_compliance",
        {"min_length": 1, "max_length": 10000},
    ),
    ("prohibited_content", PROHIBITED, "content_safety", {f"prohibited_{k}": v for k, v in PROHIBITED.items()}),
]
TOOLS = ["get_weather", "search_flights"]
AMP_ONLY = [  # amp's rule built-ins without a counterpart of ours, configured so that they score
    ("content_coverage", {"required_strings": ["pack"]}),
    ("tool_coverage", {"required_tools": TOOLS}),
    ("sequence_adherence", {"expected_sequence": TOOLS}),
]


def matched_spec() -> str:
    """Our side of PAIRS as an `--evaluators` spec (JSON is YAML)."""
    return json.dumps({"evaluators": [{"name": ours, "params": params} for ours, params, _, _ in PAIRS]})


def amp_evaluators(everything: bool) -> list[tuple[str, dict[str, Any]]]:
    """amp's side of PAIRS, with AMP_ONLY too when `everything`."""
    return [(amp, params) for _, _, amp, params in PAIRS] + (AMP_ONLY if everything else [])


# --- amp-evaluation's source and virtualenv ----------------------------------------------------------------


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    assert MIRROR is not None
    git_dir = MIRROR / ".git" if (MIRROR / ".git").is_dir() else MIRROR  # a clone's, or a bare mirror itself
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False)


def _from_mirror() -> tuple[Path, str] | None:
    """amp's source extracted from MIRROR into SOURCE_CACHE (again when the mirror's HEAD moved), and its commit."""
    head = _git("rev-parse", "HEAD")
    if head.returncode != 0:
        return None
    commit = head.stdout.decode().strip()
    source, stamp = SOURCE_CACHE / MIRROR_PATH, SOURCE_CACHE / "COMMIT"
    if not (stamp.is_file() and stamp.read_text() == commit and (source / "pyproject.toml").is_file()):
        archive = _git("archive", "--format=tar", commit, MIRROR_PATH)  # its stderr may name blobs absent elsewhere
        if archive.returncode != 0:
            return None
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(SOURCE_CACHE, filter="data")
        stamp.write_text(commit)
    return source, f"{MIRROR_PATH} at commit {commit[:12]} of {MIRROR}"


def amp_source() -> tuple[Path, str] | None:
    """(amp-evaluation's source folder, where it came from); None when there is none. ValueError when
    AMP_EVALUATION_SRC names something else."""
    given = os.environ.get("AMP_EVALUATION_SRC")
    if given:
        source = Path(given).expanduser().resolve()
        pyproject = source / "pyproject.toml"
        if not (pyproject.is_file() and 'name = "amp-evaluation"' in pyproject.read_text(encoding="utf-8")):
            raise ValueError(f"AMP_EVALUATION_SRC={given} is not amp-evaluation's folder (its pyproject.toml)")
        return source, f"{source} (AMP_EVALUATION_SRC)"
    return _from_mirror() if MIRROR is not None and MIRROR.is_dir() else None


def amp_python(source: Path, origin: str) -> Path:
    """The python of VENV with amp-evaluation installed from `source`: reused when it imports amp_evaluation and
    was installed from the same `origin`, else (re)made. RuntimeError when pip fails."""
    python, stamp = VENV / "bin" / "python", VENV / "amp-source.txt"
    probe = [str(python), "-c", "import amp_evaluation"]
    imports = python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0
    if imports and stamp.is_file() and stamp.read_text() == origin:
        return python
    print(f"installing amp-evaluation into {VENV.relative_to(ROOT)} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    install = [str(python), "-m", "pip", "install", "--quiet", str(source)]
    done = subprocess.run(install, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pip could not install amp-evaluation from {source}:\n{done.stderr[-2000:]}")
    stamp.write_text(origin)
    return python


# --- the runs ----------------------------------------------------------------------------------------------


def our_evaluation_seconds(folder: str, spec: str | None) -> float:
    """Seconds of `evaluate_offline` on the traces of `folder`, loaded first, as `agent-monitor evaluate` runs it."""
    from evaluators.traces import load_traces
    from monitor.engine.gc_tuning import tune_gc
    from monitor.offline.evaluation import evaluate_offline
    from monitor.offline.spec import pricing_overrides, selection_and_judges, signature_rules

    prices = pricing_overrides(spec)
    selection, judges = selection_and_judges(spec, prices)
    rules = signature_rules(spec)
    traces = load_traces([folder])
    tune_gc()
    started = time.perf_counter()
    report = evaluate_offline(traces, selection, None, judges=judges, signature_rules=rules, prices=prices)
    seconds = time.perf_counter() - started
    if report.trace_count != len(traces) or not traces:
        raise RuntimeError(f"evaluated {report.trace_count} of {len(traces)} traces")
    return seconds


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """The wall time of a process and its standard output; RuntimeError when it fails (exit status 1: a gate)."""
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[:3]}...: exit status {done.returncode}\n{done.stderr[-2000:]}")
    return seconds, done.stdout


def _figure(output: str, key: str) -> float:
    """The `key=value` of a BENCH line in a run's output."""
    line = next(line for line in output.splitlines() if line.startswith("BENCH "))
    return float(dict(item.split("=") for item in line.split()[1:])[key])


def runs(otlp: Path, amp: Path, spec: Path, python: Path, work: Path) -> dict[str, tuple[list[str], Path, str]]:
    """Each run's argv, working folder and the figure it gives ("wall", or the BENCH key)."""
    ours = [sys.executable, "-c", SCRIPT, "evaluate", str(otlp), "--format", "json", "--workers", "1"]
    alone = [sys.executable, "-m", "tests.bench.bench_amp", "--in-process", str(otlp)]
    return {
        "matched evaluate": ([*ours, "--evaluators", str(spec)], ROOT, "wall"),
        "matched amp": ([str(python), str(RUNNER), str(amp), json.dumps(amp_evaluators(False))], work, "amp"),
        "matched evaluate in process": ([*alone, str(spec)], ROOT, "seconds"),
        "defaults evaluate": (ours, ROOT, "wall"),
        "defaults amp": ([str(python), str(RUNNER), str(amp), json.dumps(amp_evaluators(True))], work, "amp"),
        "defaults evaluate in process": (alone, ROOT, "seconds"),
    }


def measure(planned: dict[str, tuple[list[str], Path, str]]) -> dict[str, float]:
    """The best of REPEATS of each figure, the runs taking turns; an amp run gives its wall time and, as
    "<name> in process", its evaluate_seconds."""
    ours_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    amp_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    best: dict[str, float] = {}
    for _ in range(REPEATS):
        for name, (argv, cwd, figure) in planned.items():
            seconds, output = _timed(argv, amp_env if figure == "amp" else ours_env, cwd)
            found = {name: seconds}
            if figure == "amp":
                found[f"{name} in process"] = _figure(output, "evaluate_seconds")
            elif figure == "seconds":
                found = {name: _figure(output, "seconds")}
            for key, value in found.items():
                best[key] = min(best.get(key, float("inf")), value)
    return best


def report(best: dict[str, float]) -> list[str]:
    """The figures: traces/s of each side, both ways, and the speed ratios evaluate ÷ amp."""
    lines = []
    for label in ("matched", "defaults"):
        for way in ("whole process", "in process"):
            suffix = " in process" if way == "in process" else ""
            ours, amp = best[f"{label} evaluate{suffix}"], best[f"{label} amp{suffix}"]
            lines.append(
                f"  {label:8} {way:13}  evaluate {TRACES / ours:8,.0f} traces/s ({ours:6.3f} s)   "
                f"amp {TRACES / amp:8,.0f} traces/s ({amp:6.3f} s)   evaluate ÷ amp {amp / ours:5.2f}×"
            )
    return lines


def preamble(origin: str, otlp_files: list[Path], amp_files: list[Path]) -> list[str]:
    """What is compared: amp's source, the files, the two evaluator sets."""
    megabytes = [sum(f.stat().st_size for f in files) / 1e6 for files in (otlp_files, amp_files)]
    return [
        f"amp-evaluation: {origin}",
        f"{TRACES:,} traces in {len(otlp_files)} files: OTLP {megabytes[0]:.1f} MB, amp export {megabytes[1]:.1f} MB",
        f"matched: {', '.join(f'{ours} | {amp}' for ours, _, amp, _ in PAIRS)}",
        f"defaults: evaluate's default selection | amp's {len(amp_evaluators(True))} monitor-mode rule built-ins",
        f"best of {REPEATS}, evaluate --workers 1; speed ratio evaluate ÷ amp (> 1: evaluate is faster)",
    ]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--in-process"]:  # one of the runs: ours, evaluation alone
        print(f"BENCH seconds={our_evaluation_seconds(argv[1], argv[2] if len(argv) > 2 else None):.6f}")
        return 0
    try:
        found = amp_source()
    except ValueError as exc:
        print(f"bench_amp: {exc}", file=sys.stderr)
        return 2
    if found is None:
        where = f"AMP_EVALUATION_SRC={HOW} or AMP_EVALUATION_GIT=ai-agent-management-platform"
        print(f"bench_amp: comparison with amp-evaluation skipped, no source ({CLONE}; then {where})")
        return 0
    source, origin = found
    python = amp_python(source, origin)
    with tempfile.TemporaryDirectory(prefix="bench-amp-") as tmp:
        work = Path(tmp)
        otlp_files = write_trace_files(work / "otlp", TRACES, PER_FILE)
        amp_files = write_amp_files(otlp_files, work / "amp")
        spec = work / "matched.yaml"
        spec.write_text(matched_spec(), encoding="utf-8")
        print("\n".join(preamble(origin, otlp_files, amp_files)), flush=True)
        best = measure(runs(work / "otlp", work / "amp", spec, python, work))
    print("\n".join(report(best)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
