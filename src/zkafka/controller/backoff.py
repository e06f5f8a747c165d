"""`ElectionBackoff`: how long a broker waits before campaigning again after its term failed to start.

A controller whose failover fails gives the role up (deleting /controller so another broker can try).
Without a pause it would win the very next election itself and fail again at once: every attempt bumps
/controller_epoch and writes a traceback, which is how a single unreadable znode once drove the epoch
from 1 to 2,370 in 50 s. Attempts are spaced exponentially (with jitter, so brokers that fail alike do
not campaign in lockstep) up to a cap; the first success resets the spacing.

The reason is logged in full (with its traceback, unless it is a znode that does not decode) once per
distinct cause; repeats of the same cause
are one short line each, themselves summarised by `RateLimitedLog`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from zkafka.logs import RateLimitedLog
from zkafka.zk.errors import ZNodeDataError

__all__ = ["ElectionBackoff"]

log = logging.getLogger("zkafka.controller.controller")

INITIAL_S = 0.5
MAX_S = 30.0
JITTER = 0.2


class ElectionBackoff:
    def __init__(
        self,
        broker_id: int,
        *,
        initial_s: float = INITIAL_S,
        max_s: float = MAX_S,
        jitter: float = JITTER,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._broker_id = broker_id
        self._initial_s = initial_s
        self._max_s = max_s
        self._jitter = jitter
        self._rng = rng
        self._failures = 0
        self._causes_logged: set[str] = set()
        self._repeats = RateLimitedLog(log)

    @property
    def failures(self) -> int:
        """Failed attempts since the last success."""
        return self._failures

    def failed(self, what: str, error: BaseException) -> float:
        """Record a failed attempt (`what`: "controller failover", "controller election"); returns the
        delay before the next one."""
        delay = min(self._max_s, self._initial_s * 2 ** min(self._failures, 32))
        delay *= 1 + self._jitter * (2 * self._rng() - 1)
        self._failures += 1
        cause = f"{type(error).__name__}: {error}"
        if cause not in self._causes_logged:
            self._causes_logged.add(cause)
            log.error(
                "broker %d: %s failed (%s); trying again in %.1f s",
                self._broker_id,
                what,
                cause,
                delay,
                # A znode someone filled with garbage is bad input, not a bug: no traceback.
                exc_info=None if isinstance(error, ZNodeDataError) else error,
            )
        else:
            self._repeats.warning(
                (what, cause),
                "broker %d: %s failed again (%s, attempt %d); trying again in %.1f s",
                self._broker_id,
                what,
                cause,
                self._failures,
                delay,
            )
        return delay

    def succeeded(self) -> None:
        self._failures = 0
        self._causes_logged.clear()
