"""A YAML "alias bomb" (each level repeats the one before through aliases) is refused before it is expanded:
`check-config` answers with a located error in bounded memory, instead of growing to gigabytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from monitor.config import ConfigError, load_config
from tests.integration.daemon_process import ROOT


def bomb(levels: int) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_the_expansion_is_refused_at_the_line_that_goes_over(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text("metrics:\n  windows: [5m]\n" + bomb(6), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    # l0 holds 10 values, l1 91, ... l5 597871: the first over 100000 (line 3 + 5)
    assert str(caught.value) == (
        f"{path}:8: this value expands to more than 100000 values through YAML aliases (*name); a config needs "
        "far fewer: write the values out, or use fewer aliases"
    )


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "aliases.yaml"
    path.write_text("receivers:\n  grpc: &r {host: 127.0.0.1}\n  http: *r\n", encoding="utf-8")
    assert load_config(path, env={}).receivers.http.host == "127.0.0.1"


# check-config in a child that reports its own peak RSS (KiB) on stdout after the command's output: VmHWM, the
# high-water mark of the child's own address space (ru_maxrss would carry the forking test process's RSS over exec)
CHILD = """
import re, sys
from monitor.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
with open("/proc/self/status") as status:
    print(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1))
sys.exit(code)
"""


@pytest.mark.integration
def test_check_config_stays_small(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(9), encoding="utf-8")  # 9**9 values expanded
    result = subprocess.run(
        [sys.executable, "-c", CHILD, "check-config", "--no-env", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 2 and f"{path}:6: this value expands to more than 100000 values" in result.stderr
    assert int(result.stdout.split()[-1]) < 300 * 1024  # KiB
