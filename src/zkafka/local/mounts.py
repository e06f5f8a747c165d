"""Small filesystems for broker log dirs (`zkafka cluster up --log-dir-size 64m`, Linux, root): each
broker's log dir is a tmpfs of that size, so `zkafka chaos --faults disk-full` can fill one broker's
disk without touching the machine's. The data lives in memory: it is gone once `cluster down`
unmounts it.

`fill` takes every free byte of a filesystem with one file (the disk-full fault), `unfill`
deletes it again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

FILLER = ".zkafka-chaos-fill"
"""The file `fill` writes in the log dir (a dot file: a broker looks only at partition dirs)."""


class MountError(RuntimeError):
    """A log dir could not be mounted or unmounted."""


def available() -> str | None:
    """None when tmpfs log dirs can be mounted here, else why not."""
    if not sys.platform.startswith("linux"):
        return "small log dir filesystems need Linux"
    if os.geteuid() != 0:
        return "small log dir filesystems need root (mount)"
    return None


def check_size(size: str) -> str:
    """A tmpfs size (`64m`, `1g`, bytes): ValueError for anything else."""
    if not re.fullmatch(r"[1-9][0-9]*[kKmMgG]?", size):
        raise ValueError(f"a log dir size is a number with an optional k, m or g suffix, got {size!r}")
    return size


def mount_tmpfs(path: Path, size: str) -> None:
    reason = available()
    if reason:
        raise MountError(reason)
    path.mkdir(parents=True, exist_ok=True)
    if os.path.ismount(path):
        return
    _run("mount", "-t", "tmpfs", "-o", f"size={check_size(size)},mode=0755", "tmpfs", str(path))


def unmount(path: Path) -> None:
    """Unmount `path` if it is a mount point (lazily if something still holds it open)."""
    if not os.path.ismount(path):
        return
    try:
        _run("umount", str(path))
    except MountError:
        _run("umount", "-l", str(path))


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size: str) -> Iterator[Path]:
    """`path` as a tmpfs of `size` while the block runs (tests: a log dir that can be filled)."""
    mount_tmpfs(path, size)
    try:
        yield path
    finally:
        unmount(path)


def fill(path: Path) -> int:
    """Write `path/FILLER` until the filesystem under `path` has no byte left; returns its size."""
    filler = path / FILLER
    written = 0
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 20, 1 << 12, 1):
            block = b"\0" * chunk
            while True:
                try:
                    written += os.write(fd, block)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return written


def unfill(path: Path) -> None:
    (path / FILLER).unlink(missing_ok=True)


def _run(*cmd: str) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise MountError(f"`{' '.join(cmd)}` failed: {done.stderr.strip() or done.returncode}")
