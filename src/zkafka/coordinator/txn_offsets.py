"""Offsets committed inside a transaction (TxnOffsetCommit, KIP-98/447), kept per producer until
the transaction's marker reaches the group's `__consumer_offsets` partition.

The record is the ordinary offset commit record, appended as a transactional batch carrying the
producer's id and epoch. The group does not see the offsets yet: they wait in
`Group.pending_txn_offsets`. When the COMMIT marker is written (`complete_transaction`, called by
the broker's marker path), each becomes the group's offset unless a newer record already is;
ABORT drops them. Loading does the same from the log (`store.read_partition`).
"""

from __future__ import annotations

from collections.abc import Mapping

from zkafka.coordinator.group import CommitRequest, Group, OffsetAndMetadata
from zkafka.coordinator.store import KeyValue, OffsetsTopicStore, offset_append_error
from zkafka.protocol import ErrorCode
from zkafka.protocol.groups.formats import OffsetKey, OffsetValue, encode_offset_key, encode_offset_value
from zkafka.storage.naming import TopicPartition

E = ErrorCode


class TransactionalOffsets:
    """The transactional-offset half of `GroupCoordinator` (which provides the checks)."""

    groups: dict[str, Group]
    store: OffsetsTopicStore

    def check_status(self, group_id: str | None, *, allow_empty: bool = False) -> ErrorCode:
        raise NotImplementedError

    def partition_for(self, group_id: str) -> int:
        raise NotImplementedError

    def now_ms(self) -> int:
        raise NotImplementedError

    def split_valid_offsets(
        self, offsets: Mapping[TopicPartition, CommitRequest]
    ) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, CommitRequest]]:
        raise NotImplementedError

    def validate_member_commit(
        self, group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode:
        raise NotImplementedError

    async def commit_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        instance_id: str | None,
        generation: int,
        offsets: Mapping[TopicPartition, CommitRequest],
    ) -> dict[TopicPartition, ErrorCode]:
        error = self.check_status(group_id)
        if error != E.NONE:
            return dict.fromkeys(offsets, error)
        results, valid = self.split_valid_offsets(offsets)
        group = self.groups.get(group_id)
        if group is None:  # Kafka creates it: its offsets may be committed before it has members
            group = self.groups[group_id] = Group(group_id, self.partition_for(group_id))
        if generation >= 0 or member_id or instance_id is not None:  # v3+ (KIP-447): a member's
            error = self.validate_member_commit(group, member_id, instance_id, generation)
            if error != E.NONE:
                return {**results, **dict.fromkeys(valid, error)}
        if not valid:
            return results
        now = self.now_ms()
        values = {
            tp: OffsetAndMetadata(req.offset, req.leader_epoch, req.metadata or "", now, None)
            for tp, req in valid.items()
        }
        records: list[KeyValue] = [
            (
                encode_offset_key(OffsetKey(group.group_id, tp.topic, tp.partition)),
                encode_offset_value(OffsetValue(v.offset, v.metadata, v.commit_timestamp, v.leader_epoch)),
            )
            for tp, v in values.items()
        ]
        result = await self.store.append(group.partition, records, producer=(producer_id, producer_epoch))
        error = offset_append_error(result.error)
        if error == E.NONE:
            pending = group.pending_txn_offsets.setdefault(producer_id, {})
            for i, (tp, v) in enumerate(values.items()):
                v.record_offset = result.base_offset + i
                pending[tp] = v
        return {**results, **dict.fromkeys(values, error)}

    def unstable_partitions(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with a transactional commit still waiting for its marker
        (OffsetFetch v7 `require_stable` answers them UNSTABLE_OFFSET_COMMIT, KIP-447)."""
        group = self.groups.get(group_id)
        if group is None:
            return set()
        return {tp for pending in group.pending_txn_offsets.values() for tp in pending}

    def complete_transaction(self, producer_id: int, partition: int, commit: bool) -> None:
        """The producer's marker is in `__consumer_offsets-<partition>`: apply or drop its offsets."""
        for group in self.groups.values():
            if group.partition != partition:
                continue
            pending = group.pending_txn_offsets.pop(producer_id, None)
            if not pending or not commit:
                continue
            for tp, value in pending.items():
                current = group.offsets.get(tp)
                if current is None or current.record_offset < value.record_offset:
                    group.offsets[tp] = value
