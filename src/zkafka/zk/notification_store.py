"""Kafka's sequential notification queues in ZooKeeper (part of `KafkaZkClient`): ISR changes,
log dir failures and config changes; deleting consumed entries is fenced like every controller write.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from zkafka.zk.errors import (
    ZkError,
)
from zkafka.zk.model import (
    LogDirEvent,
    TopicPartition,
)
from zkafka.zk.ops import DeleteOp
from zkafka.zk.store import ZkStore
from zkafka.zk.znodes import (
    ISR_CHANGES,
    LOG_DIR_EVENTS,
    ConfigEntityChangeNotificationZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    SequentialZNodes,
)

log = logging.getLogger("zkafka.zk.client")  # one logger for the client, whatever module a line comes from


class NotificationStoreMixin(ZkStore):
    # -- notification queues ---------------------------------------------------------------------------
    def get_notifications(self, queue: SequentialZNodes) -> list[str]:
        """Child names of a notification queue, oldest first."""
        names = [n for n in self.get_children(queue.root) or [] if queue.is_notification(n)]
        return sorted(names, key=queue.sequence_number)

    def _delete_notifications(
        self, queue: SequentialZNodes, names: Iterable[str] | None, epoch_zk_version: int | None
    ) -> None:
        names = self.get_notifications(queue) if names is None else list(names)
        if epoch_zk_version is None:
            for name in names:
                self.delete(queue.path(name))
        else:
            self._pipelined_fenced(epoch_zk_version, [(n, [DeleteOp(queue.path(n))]) for n in names])

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str:
        """PS `/isr_change_notification/isr_change_N`; returns the created path."""
        data = IsrChangeNotificationZNode.encode(partitions)
        return self.create(ISR_CHANGES.path_prefix, data, sequential=True, makepath=True)

    def get_isr_change_notifications(self) -> list[str]:
        return self.get_notifications(ISR_CHANGES)

    def get_partitions_from_isr_change_notifications(self, names: Iterable[str]) -> set[TopicPartition]:
        paths = [ISR_CHANGES.path(n) for n in names]
        out: set[TopicPartition] = set()
        for path, found in self.get_data_many(paths).items():
            if found is None:
                continue
            try:
                out |= IsrChangeNotificationZNode.decode(found[0], path)
            except ZkError as e:
                log.warning("ignoring unreadable ISR change notification: %s", e)
        return out

    def delete_isr_change_notifications(
        self, names: Iterable[str] | None = None, epoch_zk_version: int | None = None
    ) -> None:
        """Delete the given (default: all) ISR change notifications; fenced with `epoch_zk_version`."""
        self._delete_notifications(ISR_CHANGES, names, epoch_zk_version)

    def create_log_dir_event_notification(self, broker_id: int) -> str:
        data = LogDirEventNotificationZNode.encode(LogDirEvent(broker_id))
        return self.create(LOG_DIR_EVENTS.path_prefix, data, sequential=True, makepath=True)

    def get_log_dir_event_notifications(self) -> list[str]:
        return self.get_notifications(LOG_DIR_EVENTS)

    def get_brokers_from_log_dir_events(self, names: Iterable[str]) -> list[int]:
        paths = [LOG_DIR_EVENTS.path(n) for n in names]
        brokers = []
        for path, found in self.get_data_many(paths).items():
            if found is None:
                continue
            try:
                brokers.append(LogDirEventNotificationZNode.decode(found[0], path).broker_id)
            except ZkError as e:
                log.warning("ignoring unreadable log dir event notification: %s", e)
        return brokers

    def delete_log_dir_event_notifications(
        self, names: Iterable[str] | None = None, epoch_zk_version: int | None = None
    ) -> None:
        self._delete_notifications(LOG_DIR_EVENTS, names, epoch_zk_version)

    def create_config_change_notification(self, entity_path: str) -> str:
        data = ConfigEntityChangeNotificationZNode.encode(entity_path)
        queue = ConfigEntityChangeNotificationZNode.SEQUENCE
        return self.create(queue.path_prefix, data, sequential=True, makepath=True)
