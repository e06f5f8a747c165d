"""Producer ids for idempotent producers, handed out from blocks claimed in ZooKeeper.

Each broker claims 1000 ids at a time through `/latest_producer_id_block` (a conditional write,
so two brokers never get the same block) and serves InitProducerId from its block."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class ProducerIdManager:
    def __init__(self, allocate_block: Callable[[], Awaitable[tuple[int, int]]]) -> None:
        self._allocate = allocate_block
        self._next = 0
        self._end = -1  # inclusive
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next > self._end:
                self._next, self._end = await self._allocate()
            pid = self._next
            self._next += 1
            return pid
