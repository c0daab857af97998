"""Two real ways to make a directory's writes fail for a daemon under test, filled and emptied on demand (used by
tests/integration/test_intake_disk_full.py):

- `SmallFilesystem`: a tmpfs of a few MiB mounted on the directory (needs root and a mount the container allows);
  `fill()` writes a filler file until the kernel answers ENOSPC, `top_up()` takes back what the daemon freed
  meanwhile, `empty()` deletes the filler: space returns.
- `FileSizeLimit`: no mount: the daemon's main process gets a soft RLIMIT_FSIZE (`prlimit`, from outside, while it
  runs) just above the segment it is writing, so a write past it fails with EFBIG (Python ignores SIGXFSZ); its
  evaluation worker processes, which write the SQLite store, keep theirs. `empty()` lifts the limit. The limit is
  per file and per process, so it is set above every other file the main process writes (its log, at least
  `FLOOR` bytes).
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import shutil
import subprocess
from pathlib import Path

CHUNKS = (1 << 20, 64 << 10, 4 << 10, 512, 1)  # filler writes, largest first, each until ENOSPC


def mount_tmpfs(directory: Path, size: str) -> str | None:
    """Mount a tmpfs of `size` on `directory`: None when mounted, else why not (not root, mount refused)."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("mount") is None:
        return "no mount command"
    directory.mkdir(parents=True, exist_ok=True)
    command = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(directory)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    return None if done.returncode == 0 else f"mount refused: {done.stderr.strip() or done.returncode}"


def unmount(directory: Path) -> None:
    """Unmount (lazily if something still holds a file there); never raises."""
    for command in (["umount", str(directory)], ["umount", "-l", str(directory)]):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            if subprocess.run(command, capture_output=True, timeout=30, check=False).returncode == 0:
                return


class SmallFilesystem:
    """The directory on a mounted tmpfs; the filler is a file beside the log's segments."""

    method = "tmpfs"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.filler = directory / "filler"
        self._fd: int | None = None

    def fill(self) -> int:
        """Write the filler until the filesystem is full; its size."""
        self._fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return self.top_up()

    def top_up(self) -> int:
        """Take whatever space came free (segments the daemon released); the filler's size."""
        assert self._fd is not None
        for chunk in CHUNKS:
            block = b"\0" * chunk
            try:
                while os.write(self._fd, block) > 0:
                    pass
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
        return os.fstat(self._fd).st_size

    def empty(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.filler.unlink(missing_ok=True)


class FileSizeLimit:
    """RLIMIT_FSIZE on the daemon's main process, set just above its current segment; lifted by `empty()`."""

    method = "rlimit"
    FLOOR = 128 << 10  # never below this (the daemon's own log and the store's -shm are smaller)
    OVER = 1000  # bytes the segment may still grow: the next request is written in part, then EFBIG

    def __init__(self, directory: Path, pid: int, daemon_log: Path) -> None:
        self.directory = directory
        self.pid = pid
        self.daemon_log = daemon_log
        self._before = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        self._limited = False

    def fill(self) -> int:
        """Limit the main process's files to just past the segment being written; the limit."""
        segments = sorted(self.directory.glob("*.wal"))
        current = segments[-1].stat().st_size if segments else 0
        limit = max(current + self.OVER, self.FLOOR, self.daemon_log.stat().st_size + self.FLOOR)
        resource.prlimit(self.pid, resource.RLIMIT_FSIZE, (limit, self._before[1]))
        self._limited = True
        return limit

    def top_up(self) -> int:
        return resource.prlimit(self.pid, resource.RLIMIT_FSIZE)[0]

    def empty(self) -> None:
        """Lift the limit (once: the process may be gone, its pid another's, afterwards)."""
        if self._limited:
            self._limited = False
            with contextlib.suppress(ProcessLookupError):
                resource.prlimit(self.pid, resource.RLIMIT_FSIZE, self._before)
