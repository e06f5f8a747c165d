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
freed until `thaw()`, which the broker calls rarely (`THAW_INTERVAL_S`): if a pause froze the heap
since the last thaw, the heap is collected once, whole, and what is still alive frozen again (as
`zkafka server-start` froze its start-up heap).
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
_frozen_since_thaw = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _depth, _resume, _frozen_since_thaw
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
                    _frozen_since_thaw = True
                gc.enable()


def thaw() -> int:
    """If a pause froze the heap since the last thaw and none is in force: collect the whole heap
    once, frozen part included (freeing the cycles that died frozen), and freeze what is alive
    again. Returns how many objects were frozen again (0: nothing to do). One full walk of the
    heap: a broker with 66,000 replicas holds its GIL for ~0.7 s, once per `THAW_INTERVAL_S`."""
    global _frozen_since_thaw
    with _lock:
        if not _frozen_since_thaw or _depth:
            return 0
        _frozen_since_thaw = False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return gc.get_freeze_count()


def pause_depth() -> int:
    """How many pauses are in force (tests, diagnostics)."""
    return _depth
