"""`MemoryPool`: Kafka's `queued.max.request.bytes`, the bytes of requests read but not yet answered.

Every frame reserves its announced size before its body is read (or copied out of the connection's
read buffer) and gives it back when its response has been written. A connection whose next frame
does not fit stops reading (it is *muted*) and queues; as memory is released the pool grants it to
the queue in order and tells each connection it may go on. So a flood of connections announcing
large frames cannot make the broker hold more than the pool, whatever they announce.

Strict FIFO: while anyone waits, a newcomer queues behind them even if it would fit, and a waiter
that does not fit yet holds back those behind it. Otherwise a stream of small requests could keep
the pool from ever emptying enough for a large produce request, which would wait until its client
gave up. Kafka's pool does not promise this; it costs only while the pool is exhausted.

No deadlock: a frame is never larger than `socket.request.max.bytes`, the configuration makes the
pool at least that large, and the head of the queue is always granted once the pool is empty
(every reservation is released when its response is written or its connection closes).
`capacity <= 0` (Kafka's default -1) is an unbounded pool that only counts.

What the pool cannot do is make a client send the body it announced: a connection that reserved a
large frame and then sends nothing holds that memory until `connections.max.idle.ms` closes it (as
in Kafka). Hence the pool is off by default, like Kafka's.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

__all__ = ["MemoryPool"]

log = logging.getLogger("zkafka.server.network")

Granted = Callable[[], None]
"""Called when a queued reservation has been made: the connection may read its frame now."""


class MemoryPool:
    """Single-threaded (the broker's event loop)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.peak = 0
        self._queue: deque[tuple[int, Granted]] = deque()
        self._granting = False  # inside _grant's loop

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def _fits(self, size: int) -> bool:
        return not self.bounded or self.used == 0 or self.used + size <= self.capacity

    def _take(self, size: int) -> None:
        self.used += size
        self.peak = max(self.peak, self.used)

    def reserve(self, size: int, granted: Granted) -> bool:
        """Reserve `size` bytes now (True), or queue and call `granted` once they are reserved
        (False): the caller stays muted until then."""
        if not self._queue and self._fits(size):
            self._take(size)
            return True
        self._queue.append((size, granted))
        return False

    def release(self, size: int) -> None:
        self.used = max(0, self.used - size)
        self._grant()

    def forget(self, granted: Granted) -> None:
        """A queued connection went away (closed): drop its place; those behind it may fit now."""
        for i, (_, callback) in enumerate(self._queue):
            if callback == granted:
                del self._queue[i]
                if i == 0:
                    self._grant()
                return

    def _grant(self) -> None:
        if self._granting:
            # A connection woken below answered at once and released memory (or closed): the loop
            # below looks again, instead of nesting one wake-up inside another (a thousand muted
            # connections would otherwise recurse a thousand deep).
            return
        self._granting = True
        try:
            while self._queue and self._fits(self._queue[0][0]):
                size, granted = self._queue.popleft()
                self._take(size)
                try:
                    granted()
                except Exception:  # a bug in one connection must not leave the rest muted
                    log.exception("resuming a connection muted on queued.max.request.bytes failed")
        finally:
            self._granting = False
