"""Which committed offsets have expired, and the tombstones that delete offsets and groups
(Kafka's `GroupMetadata.removeExpiredOffsets` / `GroupMetadataManager.cleanupGroupMetadata`).

The clock an offset expires by depends on the group: an Empty consumer group counts from when it
became Empty (or, without that time after a reload from a v1 group record, from the commit); a
Stable consumer group expires only offsets of topics it no longer subscribes to; a group that
never had members (commits only) counts from each commit; an offset committed with an explicit
retention expires at its own deadline. Offsets with a commit in flight never expire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from zkafka.coordinator.group import Group, GroupState, OffsetAndMetadata
from zkafka.coordinator.store import KeyValue
from zkafka.protocol.groups.formats import GroupKey, OffsetKey, encode_group_key, encode_offset_key
from zkafka.storage.naming import TopicPartition


def expired_offsets(group: Group, now: int, retention_ms: int) -> list[TopicPartition]:
    """Kafka's `removeExpiredOffsets` choice of clock per group kind."""

    def expired(base: Callable[[OffsetAndMetadata], int], keep_topics: set[str]) -> list[TopicPartition]:
        out = []
        for tp, om in group.offsets.items():
            if tp.topic in keep_topics or tp in group.pending_commits:
                continue
            if om.expire_timestamp is not None:
                if now >= om.expire_timestamp:
                    out.append(tp)
            elif now - base(om) >= retention_ms:
                out.append(tp)
        return out

    if group.protocol_type is not None and group.is_(GroupState.EMPTY):
        state_ts = group.current_state_timestamp
        return expired(lambda om: state_ts if state_ts >= 0 else om.commit_timestamp, set())
    if group.protocol_type is None:
        return expired(lambda om: om.commit_timestamp, set())
    if group.is_(GroupState.STABLE):
        topics = group.subscribed_topics()
        if topics is not None:
            return expired(lambda om: om.commit_timestamp, topics)
    return []


def tombstones(groups: Iterable[Group], *, all_offsets: bool) -> dict[int, list[KeyValue]]:
    out: dict[int, list[KeyValue]] = {}
    for group in groups:
        records = out.setdefault(group.partition, [])
        if all_offsets:
            for tp in group.offsets:
                records.append((encode_offset_key(OffsetKey(group.group_id, tp.topic, tp.partition)), None))
        if group.generation > 0:
            records.append((encode_group_key(GroupKey(group.group_id)), None))
    return {p: r for p, r in out.items() if r}
