"""Change-notification queues (config changes, ACL changes, token changes): Kafka's
ZkNodeChangeNotificationListener algorithm.

A writer changes an entity znode and then creates a PERSISTENT_SEQUENTIAL notification
(`<root>/<prefix>NNNNNNNNNN`). Every broker child-watches the root and, on each change:

1. lists the children and sorts them by sequence number;
2. hands every notification whose number is greater than the last one it processed to its handler
   (notifications are only triggers: handlers re-read the entity znode), remembering the last number;
3. deletes every notification older than the purge window (15 minutes by default, by the znode's
   ctime), whoever created it; brokers that were down longer re-read everything at startup anyway.

At startup (last processed = -1) all existing notifications are processed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from zkafka.zk.errors import ZNodeDataError
from zkafka.zk.session import ZkSession
from zkafka.zk.watch_bridge import AsyncWatcher, WatchHandle, ZkExecutor, ZkWatchEvent
from zkafka.zk.znodes import SequentialZNodes, now_ms

__all__ = ["DEFAULT_PURGE_AFTER_MS", "ChangeNotificationListener"]

log = logging.getLogger(__name__)

DEFAULT_PURGE_AFTER_MS = 15 * 60 * 1000

NotificationHandler = Callable[[str, bytes], Any]
"""handler(notification name, its data)."""


class ChangeNotificationListener:
    def __init__(
        self,
        zk: ZkSession,
        queue: SequentialZNodes,
        handler: NotificationHandler,
        *,
        purge_after_ms: int = DEFAULT_PURGE_AFTER_MS,
        clock_ms: Callable[[], int] = now_ms,
    ) -> None:
        self.zk = zk
        self.queue = queue
        self.handler = handler
        self.purge_after_ms = purge_after_ms
        self.clock_ms = clock_ms
        self.last_processed = -1
        self._lock = threading.Lock()  # sync and async processing must not interleave

    # -- synchronous use (any thread but the loop's) -----------------------------------------------------
    def process_notifications(self) -> list[str]:
        """Run the algorithm once; the handler runs on the calling thread. Returns the names handled."""
        with self._lock:
            items = self._fetch_new()
            for name, data in items:
                self._handle(name, data)
            self._purge_obsolete()
        return [name for name, _ in items]

    def _fetch_new(self) -> list[tuple[str, bytes]]:
        names = [n for n in (self.zk.get_children(self.queue.root) or []) if self.queue.is_notification(n)]
        names.sort(key=self.queue.sequence_number)
        new = [n for n in names if self.queue.sequence_number(n) > self.last_processed]
        if not new:
            return []
        found = self.zk.get_data_many([self.queue.path(n) for n in new])
        # Advance even over notifications purged meanwhile: they were triggers we cannot read any more.
        self.last_processed = self.queue.sequence_number(new[-1])
        out = []
        for name in new:
            entry = found[self.queue.path(name)]
            if entry is not None:
                out.append((name, entry[0]))
        return out

    def _handle(self, name: str, data: bytes) -> None:
        try:
            self.handler(name, data)
        except ZNodeDataError as e:
            # Bad input someone wrote, not a bug: one line naming the znode, no traceback.
            log.warning("ignoring change notification: %s; first bytes %r", e, bytes(data or b"")[:32])
        except Exception:
            log.exception("handling change notification %s/%s failed", self.queue.root, name)

    def _purge_obsolete(self) -> int:
        """Delete notifications whose ctime is older than the purge window; returns how many."""
        names = [n for n in (self.zk.get_children(self.queue.root) or []) if self.queue.is_notification(n)]
        cutoff = self.clock_ms() - self.purge_after_ms
        stats = self.zk.stat_many([self.queue.path(n) for n in names])
        purged = 0
        for path, stat in stats.items():
            if stat is not None and stat.ctime < cutoff and self.zk.delete(path):
                purged += 1
        return purged

    # -- asyncio use ---------------------------------------------------------------------------------
    def attach(self, watcher: AsyncWatcher, executor: ZkExecutor) -> WatchHandle:
        """Process on every child change of the queue root (and once now). ZooKeeper work runs on
        `executor`; the handler runs on the loop thread. Returns the subscription."""
        busy = asyncio.Lock()

        async def run() -> None:
            async with busy:
                items = await executor.call(self._fetch_locked)
                for name, data in items:
                    self._handle(name, data)
                await executor.call(self._purge_locked)

        def on_change(event: ZkWatchEvent) -> None:
            task = watcher.loop.create_task(run())
            task.add_done_callback(_log_failure)

        return watcher.watch_children(self.queue.root, on_change)

    def _fetch_locked(self) -> list[tuple[str, bytes]]:
        with self._lock:
            return self._fetch_new()

    def _purge_locked(self) -> int:
        with self._lock:
            return self._purge_obsolete()


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("change notification processing failed", exc_info=task.exception())
