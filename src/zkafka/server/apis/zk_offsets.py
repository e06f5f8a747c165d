"""OffsetCommit v0 and OffsetFetch v0: offsets kept in ZooKeeper, as Kafka 0.8.1 clients expect.

Version 0 of both APIs predates Kafka-stored offsets: Kafka answers them from
`/consumers/<group>/offsets/<topic>/<partition>` (the seeds' ZooKeeper consumer's znodes), on any
broker, with no group membership or generation check, and so do we. The two stores are separate,
as in Kafka: a v0 commit is not seen by a v1+ fetch, nor the other way round.

Per-partition answers are Kafka's: an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION, too
much metadata OFFSET_METADATA_TOO_LARGE (v0 metadata is checked, then dropped: the znode holds only
the offset), and a partition with no committed offset fetches as -1 with UNKNOWN_TOPIC_OR_PARTITION.
An unreadable offset znode is answered for its partition alone (UNKNOWN_SERVER_ERROR, logged once);
a group that cannot name a znode (empty, "/", "." or "..") is INVALID_GROUP_ID.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from zkafka.logs import RateLimitedLog
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import OffsetCommitRequest, OffsetFetchRequest
from zkafka.server.dispatcher import RequestContext
from zkafka.storage.naming import TopicPartition
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import ZNodeDataError
from zkafka.zk.znodes import ConsumerOffsetZNode

log = logging.getLogger(__name__)
limited = RateLimitedLog(log)  # a ZooKeeper outage fails every commit: one line per window

ZkOffset = tuple[int, ErrorCode]


def _names_a_znode(group: str) -> bool:
    """An empty group, or one with a "/" or a "." path segment, cannot name its znodes."""
    try:
        ConsumerOffsetZNode.path(group, TopicPartition("t", 0))
    except ValueError:
        return False
    return True


def _exists(ctx: RequestContext, tp: TopicPartition) -> bool:
    return ctx.services.metadata.partition(tp.topic, tp.partition) is not None


async def commit(ctx: RequestContext, request: OffsetCommitRequest) -> dict[TopicPartition, ErrorCode]:
    max_metadata = ctx.services.config.offset_metadata_max_bytes
    results: dict[TopicPartition, ErrorCode] = {}
    writes: dict[TopicPartition, int] = {}
    for t in request.topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if not _names_a_znode(request.group_id):
                results[tp] = ErrorCode.INVALID_GROUP_ID
            elif not _exists(ctx, tp):
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > max_metadata:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            elif p.committed_offset < 0:  # the znode holds a position; there is no "unknown" to store
                results[tp] = ErrorCode.INVALID_REQUEST
            else:
                writes[tp] = p.committed_offset
    if writes:
        results.update(await ctx.services.zk.run(_write, request.group_id, writes))
    return results


async def fetch(ctx: RequestContext, request: OffsetFetchRequest) -> dict[TopicPartition, ZkOffset]:
    wanted = [TopicPartition(t.name, p) for t in request.topics or () for p in t.partition_indexes]
    if not _names_a_znode(request.group_id):
        return dict.fromkeys(wanted, (-1, ErrorCode.INVALID_GROUP_ID))
    known = [tp for tp in wanted if _exists(ctx, tp)]
    found = await ctx.services.zk.run(_read, request.group_id, known) if known else {}
    return {tp: found.get(tp, (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)) for tp in wanted}


def _write(
    zk: KafkaZkClient, group: str, offsets: Mapping[TopicPartition, int]
) -> dict[TopicPartition, ErrorCode]:
    results: dict[TopicPartition, ErrorCode] = {}
    for tp, offset in offsets.items():
        try:
            zk.commit_consumer_offset(group, tp, offset)
            results[tp] = ErrorCode.NONE
        except Exception as exc:  # one partition's failure is that partition's answer
            limited.warning(type(exc).__name__, "OffsetCommit v0 of group %r, %s: %s", group, tp, exc)
            results[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
    return results


def _read(
    zk: KafkaZkClient, group: str, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, ZkOffset]:
    found: dict[TopicPartition, ZkOffset] = {}
    for tp in partitions:
        try:
            offset = zk.get_consumer_offset(group, tp)
        except ZNodeDataError as exc:
            path = ConsumerOffsetZNode.path(group, tp)
            zk.bad_znodes.report(exc, path, None, None, "answered UNKNOWN_SERVER_ERROR for that partition")
            found[tp] = (-1, ErrorCode.UNKNOWN_SERVER_ERROR)
            continue
        if offset is not None:
            found[tp] = (offset, ErrorCode.NONE)
    return found
