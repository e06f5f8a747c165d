"""Pausing CPython's cyclic garbage collector around work that makes many long-lived objects.

A broker that becomes leader or follower of 30,000 new partitions makes a log, a partition and
their parts for each, and keeps them all: every young collection meanwhile walks these survivors
only to promote them, and each full one walks the whole heap, for nothing. Reference counting
still frees everything else; what a cycle holds waits until the pause ends.

Pauses nest and overlap, across threads too (log creation runs on a worker thread while the
event loop applies a LeaderAndIsr): the collector resumes when the last pause ends, and only if
it was on when the first began.

A pause that leaves many more tracked objects than it found (`FREEZE_AT`) ends by freezing the
heap (`gc.freeze`): what it made is kept for good, and the collector would otherwise walk it
once as young, once as middle-aged, then in every full collection, where each such walk of a
broker with 66,000 replicas held the GIL for ~0.7 s. What a frozen object's cycle holds is not
freed until `thaw()`, which the broker calls rarely (`THAW_INTERVAL_S`): the heap goes back to
the oldest generation, whose next full collection frees what cycles died frozen.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

FREEZE_AT = 50_000
"""Tracked objects more than when the collector last ran that make a pause's end freeze the heap
(a LeaderAndIsr for a few partitions leaves hundreds; one for 6,000 new ones leaves ~700,000)."""
THAW_INTERVAL_S = 3600.0

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
                if gc.get_count()[0] >= FREEZE_AT:
                    gc.freeze()
                gc.enable()


def thaw() -> int:
    """Give what earlier pauses froze back to the collector; returns how many objects that was."""
    with _lock:
        frozen = gc.get_freeze_count()
        if frozen:
            gc.unfreeze()
        return frozen


def pause_depth() -> int:
    """How many pauses are in force (tests, diagnostics)."""
    return _depth
