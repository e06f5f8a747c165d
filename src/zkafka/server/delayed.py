"""Delayed operations ("purgatory"): requests parked until a condition holds or a timeout fires.

Used by acks=all produce (wait until the high watermark passes the appended offsets) and by
long-poll fetch (wait until `min_bytes` are available). A waiter is registered under one or more
keys (topic-partitions); whoever changes a key's state calls `notify(key)`, which re-evaluates
only that key's waiters, oldest first. There is no polling loop: an idle broker does no work.

Two forms: `park` calls back (`on_done(True)` from inside the `notify` that found the condition
true, `on_done(False)` from the timer), which is what the request hot paths use: an acks=all
produce or a long-poll fetch is then answered with no task and no extra event-loop turn between
the wake-up and its response. `wait` wraps `park` in a future for code that awaits.
`notify_soon` batches a loop turn's notifications of a key into one (appends waking followers).

A timeout never fires early: the event loop's timers have millisecond granularity (uvloop rounds
them), and a long-poll fetch answered a fraction of a millisecond before `max_wait_ms` makes
clients that time their own deadlines (kafka-go) see data-less answers where they expect a timeout.
The deadline is checked against `time.monotonic()` and the timer re-armed for what is left.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable, Iterable

log = logging.getLogger(__name__)


class Waiter:
    """One parked operation (`park`'s handle: `DelayedOperations.cancel` forgets it)."""

    __slots__ = ("check", "deadline", "done", "keys", "on_done", "timer")

    def __init__(
        self,
        check: Callable[[], bool],
        on_done: Callable[[bool], None],
        keys: tuple[Hashable, ...],
        deadline: float,
    ) -> None:
        self.check = check
        self.on_done = on_done
        self.keys = keys
        self.deadline = deadline
        """time.monotonic() at which the waiter times out."""
        self.timer: asyncio.TimerHandle | None = None
        self.done = False


class DelayedOperations:
    def __init__(self) -> None:
        # per key, its waiters in arrival order (a dict: ordered, O(1) removal)
        self._by_key: dict[Hashable, dict[Waiter, None]] = {}
        self._soon: dict[Hashable, None] = {}
        """Keys `notify_soon` was given since its last flush (one flush is scheduled while any)."""

    def park(
        self,
        keys: Iterable[Hashable],
        check: Callable[[], bool],
        timeout_s: float,
        on_done: Callable[[bool], None],
    ) -> Waiter | None:
        """Call `on_done(True)` as soon as `check()` holds after a `notify` on one of `keys`, or
        `on_done(False)` when `timeout_s` passes first; exactly once. `check` is tried right away
        too: then `on_done` is called before `park` returns, and None is returned (nothing parked)."""
        if check():
            on_done(True)
            return None
        if timeout_s <= 0:
            on_done(False)
            return None
        waiter = Waiter(check, on_done, tuple(keys), time.monotonic() + timeout_s)
        by_key = self._by_key
        for k in waiter.keys:
            ws = by_key.get(k)
            if ws is None:
                ws = by_key[k] = {}
            ws[waiter] = None
        waiter.timer = asyncio.get_running_loop().call_later(timeout_s, self._expire, waiter)
        return waiter

    def wait(
        self, keys: Iterable[Hashable], check: Callable[[], bool], timeout_s: float
    ) -> asyncio.Future[bool]:
        """A future that becomes True as soon as `check()` holds after a `notify` on one of `keys`,
        or False when `timeout_s` passes first. `check` is also tried once right away. Cancelling
        the future forgets the waiter."""
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def settle(ok: bool) -> None:
            if not fut.done():
                fut.set_result(ok)

        waiter = self.park(keys, check, timeout_s, settle)
        if waiter is not None:
            fut.add_done_callback(lambda _f: self.cancel(waiter))
        return fut

    def notify(self, key: Hashable) -> None:
        waiters = self._by_key.get(key)
        if not waiters:
            return
        for w in list(waiters):
            if w.done:
                continue
            try:
                ready = w.check()
            except Exception:
                # The check runs inside whoever notifies (a follower's fetch that moved the high
                # watermark, an append): its error must fail neither that request nor the waiters
                # after this one. Completing lets the waiter's own callback re-read and answer it.
                log.exception("checking a delayed operation failed")
                ready = True
            if ready:
                self._finish(w, True)

    def notify_soon(self, key: Hashable) -> None:
        """`notify(key)` once the event loop has handled what it read this turn, once per key
        however often it is named: the produce requests of every connection read together are
        then all appended before a follower's parked fetch is answered, and it carries them in one
        response (one round trip, one high-watermark move, one consumer wake-up) instead of the
        first alone, the others waiting a whole fetch round trip more. The answer still goes out
        on the loop's next iteration. Without a running loop (tools, tests) it notifies at once."""
        soon = self._soon
        if not soon:
            try:
                asyncio.get_running_loop().call_soon(self._notify_pending)
            except RuntimeError:
                self.notify(key)
                return
        soon[key] = None

    def _notify_pending(self) -> None:
        keys, self._soon = self._soon, {}
        for key in keys:
            self.notify(key)

    def notify_all(self) -> None:
        for key in list(self._by_key):
            self.notify(key)

    def cancel(self, waiter: Waiter) -> None:
        """Forget a parked waiter without calling it back (its request went away)."""
        waiter.done = True
        self._forget(waiter)

    def cancel_all(self) -> None:
        for waiters in list(self._by_key.values()):
            for w in list(waiters):
                self._finish(w, False)

    def __len__(self) -> int:
        return len({w for ws in self._by_key.values() for w in ws})

    def _expire(self, waiter: Waiter) -> None:
        waiter.timer = None
        if waiter.done:
            return
        left = waiter.deadline - time.monotonic()
        if left > 0:
            waiter.timer = asyncio.get_running_loop().call_later(left + 0.0002, self._expire, waiter)
            return
        self._finish(waiter, False)

    def _finish(self, waiter: Waiter, result: bool) -> None:
        if waiter.done:
            return
        waiter.done = True
        self._forget(waiter)
        try:
            waiter.on_done(result)
        except Exception:  # one failed completion must not stop the others (nor the notifier)
            log.exception("completing a delayed operation failed")

    def _forget(self, waiter: Waiter) -> None:
        if waiter.timer is not None:
            waiter.timer.cancel()
            waiter.timer = None
        by_key = self._by_key
        for k in waiter.keys:
            ws = by_key.get(k)
            if ws is not None:
                ws.pop(waiter, None)
                if not ws:
                    del by_key[k]
