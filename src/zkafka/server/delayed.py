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

Ordered keys: a waiter may carry a mark per key (`park(marks=...)`: the position it needs, e.g. the
offset an acks=all produce waits for the high watermark to reach), and each key's waiters are kept
in mark order (unmarked first), so `notify_up_to(key, position)` checks only the waiters marked at
or below `position` and stops at the first above it: a high-watermark move then costs what it
completes, not one check per parked request of the partition. Whatever can make a waiter of an
ordered key ready other than reaching its mark (a leadership change) calls plain `notify`.

Timeouts are served by buckets, not by one event-loop timer per waiter: a waiter goes into the
bucket of its deadline rounded up to a step of at least 1 ms and at most 1/32 of its timeout (a
power of two of milliseconds: 8 ms for a 500 ms long poll, 512 ms for a 30 s acks=all produce),
and one loop timer per bucket in use expires it. Parking and un-parking are then dict operations:
arming and cancelling a uvloop timer per request was ~30 % of parking one, and nearly every
acks=all produce and long-poll fetch is parked and woken well before its timeout.

A timeout never fires early: the event loop's timers have millisecond granularity (uvloop rounds
them), and a long-poll fetch answered a fraction of a millisecond before `max_wait_ms` makes
clients that time their own deadlines (kafka-go) see data-less answers where they expect a timeout.
The deadline is checked against `time.monotonic()` when its bucket expires, and a waiter not yet
due goes into the bucket of what is left. It fires at most one step late.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Hashable, Iterable, Mapping

log = logging.getLogger(__name__)


class Waiter:
    """One parked operation (`park`'s handle: `DelayedOperations.cancel` forgets it)."""

    __slots__ = ("bucket", "check", "deadline", "done", "keys", "marks", "on_done")

    def __init__(
        self,
        check: Callable[[], bool],
        on_done: Callable[[bool], None],
        keys: tuple[Hashable, ...],
        deadline: float,
        marks: Mapping[Hashable, int] | None = None,
    ) -> None:
        self.check = check
        self.on_done = on_done
        self.keys = keys
        self.marks = marks
        """Per key, the position `notify_up_to` must reach before `check` is worth trying."""
        self.deadline = deadline
        """time.monotonic() at which the waiter times out."""
        self.bucket: tuple[float, int] | None = None
        """The timeout bucket holding it (`DelayedOperations._buckets`), None once out of it."""
        self.done = False


MIN_STEP_S = 0.001
"""The finest timeout bucket: the event loop's timers have millisecond granularity."""
MAX_STEP_S = 1.024
STEPS_PER_TIMEOUT = 32
"""A waiter fires at most 1/32 of its timeout late (and at most `MAX_STEP_S`), never early."""


def bucket_step(timeout_s: float) -> float:
    """The bucket width for a timeout: the largest power-of-two multiple of a millisecond not
    above `timeout_s / STEPS_PER_TIMEOUT`, within [MIN_STEP_S, MAX_STEP_S]. Few widths, so waiters
    of like timeouts share buckets (and timers)."""
    step = MIN_STEP_S
    limit = min(timeout_s / STEPS_PER_TIMEOUT, MAX_STEP_S)
    while step * 2 <= limit:
        step *= 2
    return step


class DelayedOperations:
    def __init__(self) -> None:
        # per key, its waiters in arrival order (a dict: ordered, O(1) removal)
        self._by_key: dict[Hashable, dict[Waiter, None]] = {}
        self._soon: dict[Hashable, None] = {}
        """Keys `notify_soon` was given since its last flush (one flush is scheduled while any)."""
        self._buckets: dict[tuple[float, int], dict[Waiter, None]] = {}
        """Waiters by (step, index): due when `time.monotonic()` reaches step * index."""
        self._armed: set[tuple[float, int]] = set()
        """Buckets with a loop timer pending (a bucket emptied by wake-ups keeps it: it fires once,
        finds nothing, and costs less than cancelling)."""
        self._steps: dict[float, float] = {}
        """`bucket_step` by timeout: a handful of distinct timeouts in practice."""
        self._tops: dict[Hashable, int] = {}
        """Per key with marked waiters, the highest mark filed since it last had none: a waiter
        marked below it is sorted into place, one at or above it just goes last."""

    def park(
        self,
        keys: Iterable[Hashable],
        check: Callable[[], bool],
        timeout_s: float,
        on_done: Callable[[bool], None],
        marks: Mapping[Hashable, int] | None = None,
    ) -> Waiter | None:
        """Call `on_done(True)` as soon as `check()` holds after a `notify` on one of `keys`, or
        `on_done(False)` when `timeout_s` passes first; exactly once. `check` is tried right away
        too: then `on_done` is called before `park` returns, and None is returned (nothing parked).
        `marks[key]`: `check` cannot hold before `notify_up_to(key, position)` with position >= it
        (or a plain `notify(key)`)."""
        if check():
            on_done(True)
            return None
        if timeout_s <= 0:
            on_done(False)
            return None
        now = time.monotonic()
        waiter = Waiter(check, on_done, tuple(keys), now + timeout_s, marks)
        by_key = self._by_key
        tops = self._tops
        for k in waiter.keys:
            ws = by_key.get(k)
            if ws is None:
                ws = by_key[k] = {}
            ws[waiter] = None
            mark = marks.get(k) if marks is not None else None
            top = tops.get(k)
            if mark is not None and (top is None or mark >= top):
                tops[k] = mark  # in order already: the usual case (offsets grow)
            elif top is not None:
                # below a mark already filed (or unmarked among marked): sort it into place,
                # arrival order kept among equal marks
                by_key[k] = dict.fromkeys(sorted(ws, key=lambda w, k=k: _mark(w, k)))
        step = self._steps.get(timeout_s)
        if step is None:
            step = bucket_step(timeout_s)
            if len(self._steps) < 1024:  # timeouts are a few configured values; never unbounded
                self._steps[timeout_s] = step
        self._bucket(waiter, step, now)
        return waiter

    def _bucket(self, waiter: Waiter, step: float, now: float) -> None:
        """File `waiter` under the bucket its deadline rounds up to; arm that bucket's timer."""
        bucket = (step, math.ceil(waiter.deadline / step))
        ws = self._buckets.get(bucket)
        if ws is None:
            ws = self._buckets[bucket] = {}
        ws[waiter] = None
        waiter.bucket = bucket
        if bucket not in self._armed:
            self._armed.add(bucket)
            # a hair after the bucket's end: uvloop may round a timer's delay down to the millisecond
            delay = bucket[0] * bucket[1] - now + 0.0002
            asyncio.get_running_loop().call_later(max(delay, 0.0), self._expire_bucket, bucket)

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
        self._complete_ready(list(waiters))

    def notify_up_to(self, key: Hashable, position: int) -> None:
        """`notify(key)` for the waiters marked at most `position` for `key` (and unmarked ones):
        those marked above it are not checked, their `check` cannot hold yet."""
        waiters = self._by_key.get(key)
        if not waiters:
            return
        due: list[Waiter] = []
        for w in waiters:  # in mark order: stop at the first not reached
            marks = w.marks
            if marks is not None:
                mark = marks.get(key)
                if mark is not None and mark > position:
                    break
            due.append(w)
        self._complete_ready(due)  # not while walking the dict: completing one may park others

    def _complete_ready(self, waiters: list[Waiter]) -> None:
        for w in waiters:
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

    def _expire_bucket(self, bucket: tuple[float, int]) -> None:
        self._armed.discard(bucket)
        waiters = self._buckets.pop(bucket, None)
        if not waiters:
            return
        now = time.monotonic()
        for w in list(waiters):
            w.bucket = None
            if w.done:
                continue
            if w.deadline > now:  # the timer came early: wait for what is left
                self._bucket(w, bucket[0], now)
            else:
                self._finish(w, False)

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
        bucket = waiter.bucket
        if bucket is not None:
            waiter.bucket = None
            ws = self._buckets.get(bucket)
            if ws is not None:
                ws.pop(waiter, None)
                if not ws:
                    del self._buckets[bucket]
        by_key = self._by_key
        for k in waiter.keys:
            ws = by_key.get(k)
            if ws is not None:
                ws.pop(waiter, None)
                if not ws:
                    del by_key[k]
                    self._tops.pop(k, None)


def _mark(waiter: Waiter, key: Hashable) -> float:
    """The waiter's mark for `key` as a sort key: unmarked waiters first (always checked)."""
    marks = waiter.marks
    mark = marks.get(key) if marks is not None else None
    return -math.inf if mark is None else mark
