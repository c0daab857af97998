"""Profile the daemon under the bench's load with py-spy (`pip install py-spy`, in the dev extras): every process
of its tree (the main process and each evaluation worker) sampled while the load generator sends, then a summary
of where each spends its time (self and inclusive, by function). Not a benchmark: `make bench` does not run it.

    python tests/bench/profile_daemon.py [--seconds 15] [--config '{"store": {"enabled": false}}'] [--idle]
      [--out DIR]

`--idle` counts waiting threads too (where a process waits, not only where it computes); `--out` keeps the raw
collapsed stacks (one file per process, `py-spy record --format raw`), which flame graph tools read.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.daemon_load import generate
from tests.bench.proctree import cpu_seconds, tree
from tests.integration.daemon_process import DaemonProcess

DEFAULT_CONFIG = {"assembly": {"quiet_period": "5s", "max_trace_wait": "120s"}}  # the embedded default's timing


def frame_name(frame: str) -> str:
    """`function (file.py)` of a py-spy frame `function (path/file.py:line)`."""
    name, _, where = frame.strip().partition(" (")
    return f"{name} ({where.rstrip(')').split(':')[0].rsplit('/', 1)[-1]})"


def summary(raw: Path, top: int) -> list[str]:
    """Self and inclusive shares of the functions in one process's collapsed stacks."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples, frames = int(count), [frame_name(f) for f in stack.split(";")]
        total += samples
        own[frames[-1]] += samples
        for name in set(frames):
            inclusive[name] += samples
    if not total:
        return ["  (no samples)"]
    lines = [f"  {total} samples; self:"]
    lines += [f"    {100 * n / total:5.1f}% {name}" for name, n in own.most_common(top)]
    lines.append("  inclusive:")
    lines += [f"    {100 * n / total:5.1f}% {name}" for name, n in inclusive.most_common(top)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--config", default="{}", help="JSON overrides on top of the default config's timing")
    parser.add_argument("--idle", action="store_true", help="sample waiting threads too")
    parser.add_argument("--out", type=Path, help="keep the raw collapsed stacks here")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        print("py-spy is not installed (pip install py-spy)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="profile-daemon-") as tmp:
        out = args.out or Path(tmp) / "stacks"
        out.mkdir(parents=True, exist_ok=True)
        daemon = DaemonProcess(Path(tmp), {**DEFAULT_CONFIG, **json.loads(args.config)})
        daemon.start(timeout=90)
        assert daemon.process is not None
        processes = {"main": daemon.process.pid}
        processes |= {f"worker{i}": pid for i, pid in enumerate(tree(daemon.process.pid)[1:])}
        recorders: list[subprocess.Popen] = []

        def record() -> None:
            for label, pid in processes.items():
                command = [spy, "record", "--pid", str(pid), "--duration", str(max(int(args.seconds) - 2, 1))]
                command += ["--rate", "200", "--format", "raw", "--nonblocking", "-o", str(out / f"{label}.txt")]
                command += ["--idle"] if args.idle else []
                recorders.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        cpu_before = {label: cpu_seconds(pid) for label, pid in processes.items()}
        try:
            load = generate(f"127.0.0.1:{daemon.grpc_port}", args.seconds, record, lambda: None)
            cpu = {label: cpu_seconds(pid) - cpu_before[label] for label, pid in processes.items()}
            for recorder in recorders:
                recorder.wait(timeout=args.seconds + 60)
        finally:
            daemon.stop()
        print(f"load: {load['traces_per_second']:,.0f} traces/s accepted, throttled {load['unavailable']} times")
        elapsed = load["elapsed"]
        print(
            "CPU over the send window (py-spy's own sampling included): "
            + ", ".join(f"{label} {100 * seconds / elapsed:.0f} %" for label, seconds in cpu.items())
        )
        for label in processes:
            raw = out / f"{label}.txt"
            print(f"== {label}")
            print("\n".join(summary(raw, args.top) if raw.exists() else ["  (py-spy wrote nothing)"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
