"""DeleteRecords: move partitions' log start offsets forward (KafkaJS `deleteTopicRecords`,
`kafka-delete-records`, Kafka's admin client).

Per partition, on its leader: the target is the requested offset, or the high watermark for -1;
above the high watermark (or below -1) is OFFSET_OUT_OF_RANGE, as in Kafka. The leader raises its
log start offset at once (whole segments below it go at the next retention check) and followers
follow through the log start offset in fetch responses. The answer waits, woken by the followers'
fetches, until every in-sync replica has moved its own start (the low watermark), or `timeout_ms`
passes (REQUEST_TIMED_OUT with the low watermark reached so far).
"""

from __future__ import annotations

from collections.abc import Awaitable

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from zkafka.server.apis.common import error_of
from zkafka.server.dispatcher import RequestContext
from zkafka.server.partition import Partition
from zkafka.server.replica_manager import low_watermark_key
from zkafka.storage.errors import StorageError
from zkafka.storage.naming import TopicPartition
from zkafka.zk.topic_names import is_internal_topic

Resp = DeleteRecordsResponse
HIGH_WATERMARK = -1


def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> Resp | Awaitable[Resp]:
    replicas = ctx.services.replicas
    results: dict[TopicPartition, Resp.DeleteRecordsPartitionResult] = {}
    waiting: dict[TopicPartition, tuple[Partition, int]] = {}
    for t in request.topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            out = Resp.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1)
            results[tp] = out
            try:
                if is_internal_topic(t.name):
                    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot delete records of {t.name}")
                partition = replicas.leader_partition(tp)
                target = partition.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if target < 0 or target > partition.high_watermark:
                    raise KafkaError(
                        ErrorCode.OFFSET_OUT_OF_RANGE,
                        f"offset {p.offset} is outside [0, {partition.high_watermark}] (the high watermark)",
                    )
                try:
                    partition.increment_log_start_offset(target)
                except StorageError as e:
                    raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(e)) from None
                waiting[tp] = (partition, target)
            except Exception as e:
                out.error_code = error_of(e)
    if not waiting:
        return _response(results)
    return _await_low_watermarks(ctx, results, waiting, request.timeout_ms)


async def _await_low_watermarks(
    ctx: RequestContext,
    results: dict[TopicPartition, Resp.DeleteRecordsPartitionResult],
    waiting: dict[TopicPartition, tuple[Partition, int]],
    timeout_ms: int,
) -> Resp:
    def reached() -> bool:
        return all(p.low_watermark() >= target or not p.is_leader for p, target in waiting.values())

    keys = [low_watermark_key(tp) for tp in waiting]
    await ctx.services.replicas.delayed.wait(keys, reached, max(timeout_ms, 0) / 1000)
    for tp, (p, target) in waiting.items():
        out = results[tp]
        if not p.is_leader:
            out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            continue
        out.low_watermark = p.low_watermark()
        if out.low_watermark < target:
            out.error_code = ErrorCode.REQUEST_TIMED_OUT
    return _response(results)


def _response(results: dict[TopicPartition, Resp.DeleteRecordsPartitionResult]) -> Resp:
    by_topic: dict[str, list[Resp.DeleteRecordsPartitionResult]] = {}
    for tp, out in results.items():
        by_topic.setdefault(tp.topic, []).append(out)
    return Resp(topics=[Resp.DeleteRecordsTopicResult(name=t, partitions=ps) for t, ps in by_topic.items()])
