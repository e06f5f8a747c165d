"""`runtime.collector.paused`: nested and overlapping pauses (threads too) resume the collector
once, when the last one ends, and only if it was on when the first began."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from zkafka.runtime import collector


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    assert collector.pause_depth() == 0
    gc.unfreeze()  # leave the worker's heap as it was for the tests after these
    (gc.enable if was else gc.disable)()


def test_a_pause_stops_the_collector_and_resumes_it() -> None:
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_resume_at_the_outermost_end() -> None:
    with collector.paused():
        with collector.paused():
            assert collector.pause_depth() == 2
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_an_exception_still_ends_the_pause() -> None:
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_overlapping_pauses_in_two_threads() -> None:
    """The first pause ends while the other thread's is in force: the collector stays off until
    the second one ends (a worker thread creating logs while the loop applies a request)."""
    entered, first_done, release = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def worker() -> None:
        with collector.paused():
            entered.set()
            first_done.wait(10)
            seen.append(gc.isenabled())
            release.wait(10)

    t = threading.Thread(target=worker)
    with collector.paused():
        t.start()
        assert entered.wait(10)
    first_done.set()  # this thread's pause is over, the worker's is not
    release.set()
    t.join(10)
    assert seen == [False]
    assert gc.isenabled()


def test_a_pause_that_keeps_many_objects_freezes_them_and_one_thaw_collects_and_refreezes() -> None:
    collector.thaw()
    before = gc.get_freeze_count()
    kept: list[list[int]] = []
    with collector.paused():
        kept.extend([i] for i in range(collector.FREEZE_AT + 1000))  # lists are always tracked
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + collector.FREEZE_AT
    assert collector.thaw() >= collector.FREEZE_AT  # what is alive is frozen again
    assert gc.get_freeze_count() >= collector.FREEZE_AT
    assert collector.thaw() == 0  # nothing frozen since: no second walk of the heap
    assert len(kept) == collector.FREEZE_AT + 1000


def test_a_pause_that_keeps_few_objects_freezes_nothing() -> None:
    collector.thaw()
    before = gc.get_freeze_count()
    with collector.paused():
        kept = [[i] for i in range(100)]
    assert gc.get_freeze_count() == before and len(kept) == 100
    assert collector.thaw() == 0


def test_no_thaw_while_a_pause_is_in_force() -> None:
    collector.thaw()
    with collector.paused():
        filler = [[i] for i in range(collector.FREEZE_AT + 1000)]
    with collector.paused():
        assert collector.thaw() == 0  # a pause is making objects: left for the next thaw
    assert collector.thaw() > 0 and len(filler) > 0


def test_a_cycle_that_died_frozen_is_freed_by_the_thaw() -> None:
    """The price of freezing, and why the broker thaws: a cycle made unreachable while frozen
    waits for the thaw's collection."""
    collector.thaw()

    class Node:
        pass

    with collector.paused():
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        filler = [[i] for i in range(collector.FREEZE_AT + 1000)]
    probe = weakref.ref(a)
    del a, b, filler
    gc.collect()
    assert probe() is not None  # frozen: not collected
    collector.thaw()
    assert probe() is None
