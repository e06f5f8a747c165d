"""`runtime.collector.paused`: nested and overlapping pauses (threads too) resume the collector
once, when the last one ends, and only if it was on when the first began."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from zkafka.runtime import collector


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    assert collector.pause_depth() == 0
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
