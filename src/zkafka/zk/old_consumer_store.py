"""ZooKeeper side of the old (0.8 - 1.1) ZooKeeper consumer: `/consumers/<group>/{ids,owners,offsets}`.
Mixed into `KafkaZkClient`; same threading rules (blocking, thread-safe).

* ids: one ephemeral registration per consumer (its subscription);
* owners: one ephemeral znode per claimed partition holding the owning thread id; a claim that finds
  the znode already there fails (the previous owner has not released it yet) unless the znode is
  ours already (a claim whose response was lost);
* offsets: persistent decimal text, written unconditionally.
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from zkafka.zk.errors import NodeOwnedElsewhereError
from zkafka.zk.model import ConsumerRegistration, TopicPartition
from zkafka.zk.session import ZkSession
from zkafka.zk.znodes import (
    ConsumerGroupZNodes,
    ConsumerIdZNode,
    ConsumerOffsetZNode,
    ConsumerOwnerZNode,
    ConsumersZNode,
)

__all__ = ["OldConsumerStoreMixin"]


class OldConsumerStoreMixin(ZkSession):
    def get_consumer_groups(self) -> list[str]:
        return sorted(self.get_children(ConsumersZNode.path()) or [])

    # -- registrations ---------------------------------------------------------------------------------
    def register_consumer(self, group: str, consumer_id: str, registration: ConsumerRegistration) -> None:
        """Create the ephemeral `/consumers/<group>/ids/<consumer id>`; re-registering on the same
        session rewrites it. Raises NodeOwnedElsewhereError if another session holds the id."""
        path = ConsumerIdZNode.path(group, consumer_id)
        data = ConsumerIdZNode.encode(registration)
        while True:
            try:
                self.create(path, data, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                pass
            found = self.get_data(path)
            if found is None:
                continue  # went away meanwhile
            owner = found[1].ephemeralOwner
            if not self.is_own_session(owner):
                raise NodeOwnedElsewhereError(
                    f"consumer id {consumer_id!r} of group {group!r} is registered by another session "
                    f"(0x{owner:x})"
                )
            try:
                self.set_data(path, data, found[1].version)
                return
            except (BadVersionError, NoNodeError):
                continue

    def get_consumer_ids(self, group: str) -> list[str]:
        """Registered consumer ids, sorted (the order the range assignment needs)."""
        return sorted(self.get_children(ConsumerGroupZNodes.ids_path(group)) or [])

    def get_consumer_registration(self, group: str, consumer_id: str) -> ConsumerRegistration | None:
        path = ConsumerIdZNode.path(group, consumer_id)
        found = self.get_data(path)
        return None if found is None else ConsumerIdZNode.decode(found[0], path)

    def get_consumer_registrations(self, group: str) -> dict[str, ConsumerRegistration]:
        ids = self.get_consumer_ids(group)
        paths = {ConsumerIdZNode.path(group, cid): cid for cid in ids}
        out = {}
        for path, found in self.get_data_many(list(paths)).items():
            if found is not None:
                out[paths[path]] = ConsumerIdZNode.decode(found[0], path)
        return out

    # -- partition ownership ---------------------------------------------------------------------------
    def claim_partition_owner(self, group: str, tp: TopicPartition, thread_id: str) -> bool:
        """Ephemeral create of the owner znode. False if another owner holds it."""
        path = ConsumerOwnerZNode.path(group, tp)
        try:
            self.create(path, ConsumerOwnerZNode.encode(thread_id), ephemeral=True, makepath=True)
            return True
        except NodeExistsError:
            found = self.get_data(path)
        # Our own earlier claim (e.g. its response was lost) counts as success.
        return (
            found is not None
            and found[0] == ConsumerOwnerZNode.encode(thread_id)
            and self.is_own_session(found[1].ephemeralOwner)
        )

    def get_partition_owner(self, group: str, tp: TopicPartition) -> str | None:
        path = ConsumerOwnerZNode.path(group, tp)
        found = self.get_data(path)
        return None if found is None else ConsumerOwnerZNode.decode(found[0], path)

    def release_partition_owner(self, group: str, tp: TopicPartition, thread_id: str | None = None) -> bool:
        """Delete the owner znode; with `thread_id`, only if that thread still owns it.
        Returns True if a znode was deleted."""
        path = ConsumerOwnerZNode.path(group, tp)
        if thread_id is None:
            return self.delete(path)
        found = self.get_data(path)
        if found is None or found[0] != ConsumerOwnerZNode.encode(thread_id):
            return False
        try:
            return self.delete(path, found[1].version)
        except BadVersionError:
            return False

    # -- offsets ---------------------------------------------------------------------------------------
    def commit_consumer_offset(self, group: str, tp: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"offset must be non-negative, got {offset}")
        self.set_or_create(ConsumerOffsetZNode.path(group, tp), ConsumerOffsetZNode.encode(offset))

    def get_consumer_offset(self, group: str, tp: TopicPartition) -> int | None:
        path = ConsumerOffsetZNode.path(group, tp)
        found = self.get_data(path)
        return None if found is None else ConsumerOffsetZNode.decode(found[0], path)

    def get_consumer_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Every offset committed under `/consumers/<group>/offsets` (children that are not partition
        numbers are skipped)."""
        out = {}
        for topic in self.get_children(ConsumerGroupZNodes.offsets_path(group)) or []:
            for p in self.get_children(ConsumerGroupZNodes.offsets_path(group, topic)) or []:
                if p.isdigit():
                    offset = self.get_consumer_offset(group, TopicPartition(topic, int(p)))
                    if offset is not None:
                        out[TopicPartition(topic, int(p))] = offset
        return out
