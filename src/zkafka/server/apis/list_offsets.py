"""ListOffsets: earliest, latest (the high watermark for consumers; the last stable offset for
read_committed ones, v2+), or by timestamp (below the same bound).

v0 (Burrow, sarama, kafka-go 0.2) answers with `old_style_offsets`: for earliest and latest, Kafka's
old "offsets before" list (`_offsets_before`), at most `max_num_offsets` of them; for a timestamp,
the one offset found (the high watermark when none is), never an empty list, which Burrow would
index without checking."""

from __future__ import annotations

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from zkafka.server.apis.common import error_of, leader_for
from zkafka.server.dispatcher import RequestContext
from zkafka.server.partition import Partition
from zkafka.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

Resp = ListOffsetsResponse
READ_COMMITTED = 1


def handle(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    replicas = ctx.services.replicas
    is_follower = request.replica_id >= 0
    committed = ctx.api_version >= 2 and request.isolation_level == READ_COMMITTED
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            out = Resp.ListOffsetsPartitionResponse(partition_index=p.partition_index)
            try:
                part = leader_for(replicas, t.name, p.partition_index, p.current_leader_epoch)
                log = part.log
                visible = part.last_stable_offset if committed else part.high_watermark
                if p.timestamp == EARLIEST_TIMESTAMP:
                    offset, ts = log.log_start_offset, -1
                elif p.timestamp == LATEST_TIMESTAMP:
                    offset, ts = (log.log_end_offset if is_follower else visible), -1
                elif p.timestamp < 0 and p.timestamp != -3:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"bad timestamp {p.timestamp}")
                else:
                    found = log.offset_for_timestamp(p.timestamp)
                    if found is None or (not is_follower and found.offset >= visible):
                        offset, ts = -1, -1
                    else:
                        offset, ts = found.offset, found.timestamp
                out.offset, out.timestamp = offset, ts
                out.leader_epoch = part.leader_epoch
                if ctx.api_version == 0 and p.timestamp in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP):
                    out.old_style_offsets = _offsets_before(part, p.timestamp, p.max_num_offsets, is_follower)
                else:  # one offset: Burrow reads offsets[0] without checking the length
                    out.old_style_offsets = [offset if offset >= 0 else part.high_watermark]
            except KafkaError as e:
                out.error_code = e.code
            except Exception as e:
                out.error_code = error_of(e)
            parts.append(out)
        topics.append(Resp.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return Resp(topics=topics)


def _offsets_before(part: Partition, timestamp: int, max_num_offsets: int, is_follower: bool) -> list[int]:
    """Kafka's fetchOffsetsBefore for earliest and latest: the log start offset; or the log end
    offset followed by the segments' base offsets, newest first, at most `max_num_offsets`. A
    consumer sees nothing above the high watermark (it leads the list instead)."""
    log = part.log
    if timestamp == EARLIEST_TIMESTAMP:
        offsets = [log.log_start_offset]
    else:
        start = log.log_start_offset
        offsets = [max(base, start) for base in log.segment_bases()]
        if log.active_segment.size > 0:
            offsets.append(log.log_end_offset)
        offsets.reverse()
    offsets = offsets[: max(max_num_offsets, 0)]
    if not is_follower:
        hw = part.high_watermark
        if any(o > hw for o in offsets):
            offsets = [hw, *(o for o in offsets if o <= hw)]
    return offsets
