"""The authorizer's ACL cache, fed from ZooKeeper and kept current by the change notifications.

As in Kafka's AclAuthorizer: at start every resource of both stores (`/kafka-acl/<Type>/<name>`,
`/kafka-acl-extended/prefixed/<Type>/<name>`) is read; afterwards each notification in
`/kafka-acl-changes` (literal, text `TOPIC:name`) or `/kafka-acl-extended-changes` (JSON) names one
resource, which is re-read. Notifications are only triggers, so re-reading is always safe and the
cache converges on what ZooKeeper holds. A znode that does not decode is reported once
(`zk.bad_znodes`) and read as no ACLs; a notification that does not decode is logged and skipped:
neither stops the cache.

The cache publishes an immutable `AclSnapshot`; swapping the attribute is atomic, so decisions on the
event loop never see a half-applied update and never wait for a lock.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from zkafka.security.authorizer import AclSnapshot
from zkafka.zk.acls import AclEntry, ResourcePattern
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.notifications import ChangeNotificationListener
from zkafka.zk.watch_bridge import AsyncWatcher, WatchHandle, ZkExecutor
from zkafka.zk.znodes import (
    EXTENDED_ACL_CHANGES,
    LITERAL_ACL_CHANGES,
    ExtendedAclChangeZNode,
    LiteralAclChangeZNode,
)

__all__ = ["AclCache"]

log = logging.getLogger(__name__)


class AclCache:
    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk
        self.snapshot = AclSnapshot()
        self._lock = threading.Lock()  # serialises writers of `snapshot`; readers never take it
        self.listeners = (
            ChangeNotificationListener(zk, LITERAL_ACL_CHANGES, self._on_literal_change),
            ChangeNotificationListener(zk, EXTENDED_ACL_CHANGES, self._on_extended_change),
        )

    # -- loading ------------------------------------------------------------------------------------
    def load(self) -> None:
        """Create the ACL paths if missing and read every resource (blocking; a ZooKeeper thread)."""
        self.zk.create_acl_paths()
        everything = self.zk.get_all_acls_lenient()
        with self._lock:
            self.snapshot = AclSnapshot({p: v.acls for p, v in everything.items()})
        log.info("ACL cache loaded: %d resource patterns with ACLs", len(self.snapshot))

    def refresh(self, pattern: ResourcePattern) -> frozenset[AclEntry]:
        """Re-read one resource (blocking) and publish the new snapshot; returns its ACLs."""
        try:
            acls = self.zk.get_acls_lenient(pattern).acls
        except ValueError as e:  # a name no znode path can be built for (e.g. `a/b`): it has no ACLs
            log.warning("ignoring ACL change for %s: %s", pattern, e)
            acls = frozenset()
        with self._lock:
            self.snapshot = self.snapshot.with_resource(pattern, acls)
        return acls

    # -- notifications -----------------------------------------------------------------------------
    def _on_literal_change(self, name: str, data: bytes) -> None:
        self.refresh(LiteralAclChangeZNode.decode(data, LITERAL_ACL_CHANGES.path(name)))

    def _on_extended_change(self, name: str, data: bytes) -> None:
        self.refresh(ExtendedAclChangeZNode.decode(data, EXTENDED_ACL_CHANGES.path(name)))

    def process_notifications(self) -> int:
        """Handle every new notification of both queues now (blocking); returns how many."""
        return sum(len(listener.process_notifications()) for listener in self.listeners)

    def attach(self, watcher: AsyncWatcher, executor: ZkExecutor) -> list[WatchHandle]:
        """Follow both queues from an event loop (call `load` first, on a thread). The listener runs its
        handlers on the loop, so each one only schedules the re-read on `executor`; one FIFO lock keeps
        re-reads in notification order, so an older read can never be published after a newer one."""
        ordered = asyncio.Lock()

        async def refresh(pattern: ResourcePattern) -> None:
            async with ordered:
                await executor.call(self.refresh, pattern)

        def schedule(pattern: ResourcePattern) -> None:
            watcher.loop.create_task(refresh(pattern)).add_done_callback(_log_failure)

        literal = ChangeNotificationListener(
            self.zk,
            LITERAL_ACL_CHANGES,
            lambda name, data: schedule(LiteralAclChangeZNode.decode(data, LITERAL_ACL_CHANGES.path(name))),
        )
        extended = ChangeNotificationListener(
            self.zk,
            EXTENDED_ACL_CHANGES,
            lambda name, data: schedule(ExtendedAclChangeZNode.decode(data, EXTENDED_ACL_CHANGES.path(name))),
        )
        return [literal.attach(watcher, executor), extended.attach(watcher, executor)]


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("ACL cache refresh failed", exc_info=task.exception())
