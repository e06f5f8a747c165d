"""The broker's background tasks, so that shutdown can end all of them in one place.

Three kinds: periodic work (`every`: retention, flushes, checkpoints, the cleaner, the idle
connection sweep; `every_async` when a round gathers on the loop and writes on a worker),
long-running loops (`run`: ISR maintenance), and one-off jobs started by events (`spawn`:
applying a config change). A failure is logged and never ends a periodic task: the next
round tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

MIN_INTERVAL_S = 0.01


class Scheduler:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def every(self, interval_s: float, name: str, fn: Callable[[], object], *, blocking: bool) -> None:
        """`fn()` every `interval_s`, first after one interval. `blocking` work (disk: fsync,
        cleaning, checkpoints) runs on a worker thread, off the event loop."""

        async def round_() -> None:
            if blocking:
                await asyncio.get_running_loop().run_in_executor(None, fn)
            else:
                fn()

        self.every_async(interval_s, name, round_)

    def every_async(self, interval_s: float, name: str, fn: Callable[[], Awaitable[object]]) -> None:
        """`await fn()` every `interval_s`, first after one interval: periodic work that takes what
        it needs on the loop and hands the slow part to a worker itself."""
        interval = max(interval_s, MIN_INTERVAL_S)

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await fn()
                except Exception:
                    log.exception("periodic task %s failed", name)

        self._track(asyncio.create_task(loop(), name=name))

    def run(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        """A task that runs until `stop` (it handles its own failures)."""
        self._track(asyncio.create_task(coro, name=name))

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """A one-off job; its failure is logged."""
        task = asyncio.ensure_future(coro)
        task.add_done_callback(_log_failure)
        self._track(task)

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())
