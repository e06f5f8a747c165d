"""Pausing CPython's cyclic garbage collector around work that makes many long-lived objects.

A broker that becomes leader or follower of 30,000 new partitions makes a log, a partition and
their parts for each, and keeps them all: every young collection meanwhile walks these survivors
only to promote them, and each full one walks the whole heap, for nothing. Reference counting
still frees everything else; what a cycle holds waits until the pause ends.

Pauses nest and overlap, across threads too (log creation runs on a worker thread while the
event loop applies a LeaderAndIsr): the collector resumes when the last pause ends, and only if
it was on when the first began.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_resume = False
"""Whether the collector was on when the outermost pause began."""


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


def pause_depth() -> int:
    """How many pauses are in force (tests, diagnostics)."""
    return _depth
