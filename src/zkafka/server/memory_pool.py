"""`MemoryPool`: Kafka's `queued.max.request.bytes`, the bytes of requests read but not yet answered.

Every frame reserves its announced size before its body is read (or copied out of the connection's
read buffer) and gives it back when its response has been written. A connection whose next frame
does not fit stops reading (it is *muted*) and waits in FIFO order; releases wake the waiters while
memory is there. So a flood of connections announcing large frames cannot make the broker hold more
than the pool, whatever they announce.

No deadlock: a frame is never larger than `socket.request.max.bytes`, the configuration makes the
pool at least that large, and a connection with nothing reserved is always admitted when the pool
is empty. `capacity <= 0` (Kafka's default -1) is an unbounded pool that only counts.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

__all__ = ["MemoryPool"]

log = logging.getLogger("zkafka.server.network")


class MemoryPool:
    """Single-threaded (the broker's event loop)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.peak = 0
        self._waiting: deque[Callable[[], None]] = deque()
        self._waking = False  # inside release()'s wake loop
        self._released_while_waking = False

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def try_reserve(self, size: int) -> bool:
        if self.bounded and self.used + size > self.capacity and self.used > 0:
            return False
        self.used += size
        self.peak = max(self.peak, self.used)
        return True

    def release(self, size: int) -> None:
        self.used = max(0, self.used - size)
        if not self._waiting:
            return
        if self._waking:
            # A woken connection answered a request at once and released its memory: the loop
            # below goes round again instead of recursing (a thousand muted connections would
            # otherwise nest a thousand wake-ups deep).
            self._released_while_waking = True
            return
        self._waking = True
        try:
            while self._waiting:
                self._released_while_waking = False
                # Each waiter tries again, in order; one that still does not fit queues itself anew.
                waiting, self._waiting = self._waiting, deque()
                while waiting:
                    wake = waiting.popleft()
                    try:
                        wake()
                    except Exception:  # a bug in one connection must not leave the rest muted
                        log.exception("waking a connection muted on queued.max.request.bytes failed")
                if not self._released_while_waking:
                    break
        finally:
            self._waking = False

    def wait(self, wake: Callable[[], None]) -> None:
        """Call `wake` once memory has been released (FIFO among the waiters)."""
        self._waiting.append(wake)

    def forget(self, wake: Callable[[], None]) -> None:
        """A waiter that went away (its connection closed)."""
        try:
            self._waiting.remove(wake)
        except ValueError:
            pass
