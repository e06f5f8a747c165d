"""Delayed operations ("purgatory"): requests parked until a condition holds or a timeout fires.

Used by acks=all produce (wait until the high watermark passes the appended offsets) and by
long-poll fetch (wait until `min_bytes` are available). A waiter is registered under one or more
keys (topic-partitions); whoever changes a key's state calls `notify(key)`, which re-evaluates
only that key's waiters. There is no polling loop: an idle broker does no work.

A timeout never fires early: the event loop's timers have millisecond granularity (uvloop rounds
them), and a long-poll fetch answered a fraction of a millisecond before `max_wait_ms` makes
clients that time their own deadlines (kafka-go) see data-less answers where they expect a timeout.
The deadline is checked against `time.monotonic()` and the timer re-armed for what is left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field


@dataclass(eq=False, slots=True)
class _Waiter:
    check: Callable[[], bool]
    future: asyncio.Future[bool]
    keys: tuple[Hashable, ...]
    deadline: float = 0.0
    """time.monotonic() at which the waiter times out."""
    timer: asyncio.TimerHandle | None = field(default=None)


class DelayedOperations:
    def __init__(self) -> None:
        self._by_key: dict[Hashable, set[_Waiter]] = {}

    def wait(
        self, keys: Iterable[Hashable], check: Callable[[], bool], timeout_s: float
    ) -> asyncio.Future[bool]:
        """A future that becomes True as soon as `check()` holds after a `notify` on one of `keys`,
        or False when `timeout_s` passes first. `check` is also tried once right away."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        if check():
            fut.set_result(True)
            return fut
        if timeout_s <= 0:
            fut.set_result(False)
            return fut
        waiter = _Waiter(check, fut, tuple(keys), deadline=time.monotonic() + timeout_s)
        for k in waiter.keys:
            self._by_key.setdefault(k, set()).add(waiter)
        waiter.timer = loop.call_later(timeout_s, self._expire, waiter)
        fut.add_done_callback(lambda _f: self._forget(waiter))
        return fut

    def notify(self, key: Hashable) -> None:
        waiters = self._by_key.get(key)
        if not waiters:
            return
        for w in list(waiters):
            if not w.future.done() and w.check():
                self._finish(w, True)

    def notify_all(self) -> None:
        for key in list(self._by_key):
            self.notify(key)

    def cancel_all(self) -> None:
        for waiters in list(self._by_key.values()):
            for w in list(waiters):
                self._finish(w, False)

    def __len__(self) -> int:
        return len({w for ws in self._by_key.values() for w in ws})

    def _expire(self, waiter: _Waiter) -> None:
        left = waiter.deadline - time.monotonic()
        if left > 0 and not waiter.future.done():
            waiter.timer = asyncio.get_running_loop().call_later(left + 0.0002, self._expire, waiter)
            return
        self._finish(waiter, False)

    def _finish(self, waiter: _Waiter, result: bool) -> None:
        if not waiter.future.done():
            waiter.future.set_result(result)
        self._forget(waiter)

    def _forget(self, waiter: _Waiter) -> None:
        if waiter.timer is not None:
            waiter.timer.cancel()
            waiter.timer = None
        for k in waiter.keys:
            ws = self._by_key.get(k)
            if ws is not None:
                ws.discard(waiter)
                if not ws:
                    del self._by_key[k]
